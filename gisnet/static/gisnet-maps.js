/* gisnet web maps: vector layers, legend, title, search and panels on a Leaflet map.
 * Config comes from gisnet.maps (Python): every layer is a GeoJSON FeatureCollection in
 * EPSG:4326 whose properties are already formatted for display; a property that is
 * absent is shown as cfg.empty ("\u2014", gisnet.labels.EMPTY). MIT licence, part of gisnet. */
(function () {
  "use strict";

  var EMPTY = "\u2014";

  function esc(v) {
    return String(v).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }

  function val(props, key) {
    var v = props[key];
    return (v === undefined || v === null || v === "") ? EMPTY : v;
  }

  function fill(template, props) {
    return template.replace(/\{([\w@.-]+)\}/g, function (_, k) { return esc(val(props, k)); });
  }

  function merged(spec, props) {
    var out = {};
    Object.keys(spec.constants || {}).forEach(function (k) { out[k] = spec.constants[k]; });
    Object.keys(props || {}).forEach(function (k) { out[k] = props[k]; });
    return out;
  }

  function popupHtml(spec, props) {
    props = merged(spec, props);
    var html = '<div class="gisnet-popup"><b>' + fill(spec.popupTitle || spec.name, props) +
      "</b><table>";
    (spec.fields || []).forEach(function (f) {
      if (f[2] && (props[f[1]] === undefined || props[f[1]] === null)) { return; }
      html += "<tr><th>" + esc(f[0]) + "</th><td>" + esc(val(props, f[1])) + "</td></tr>";
    });
    return html + "</table></div>";
  }

  /* Coordinates: delta + zigzag, 5 bits a character (gisnet.maps.encode_coords). */
  function decodeCoords(str, precision) {
    var out = [], i = 0, x = 0, y = 0, len = str.length, scale = Math.pow(10, precision);
    function next() {
      var r = 0, s = 0, b;
      do { b = str.charCodeAt(i++) - 63; r |= (b & 31) << s; s += 5; } while (b >= 32);
      return (r & 1) ? ~(r >>> 1) : (r >>> 1);
    }
    while (i < len) {
      x += next(); y += next();
      out.push([x / scale, y / scale]);
    }
    return out;
  }

  var numberFormats = {};  // one Intl.NumberFormat per decimals (creating one is slow)
  function fmtValue(v, f) {
    if (!f) { return v; }
    if (f[0] === "p") { return (v * 100).toFixed(f[1]) + " %"; }
    var nf = numberFormats[f[1]];
    if (!nf) {
      nf = numberFormats[f[1]] = new Intl.NumberFormat("en-US", {
        minimumFractionDigits: f[1], maximumFractionDigits: f[1]});
    }
    return nf.format(Number(v)) + (f[2] ? " " + f[2] : "");
  }

  /* A layer block from gisnet.maps.encode_layer -> GeoJSON FeatureCollection. */
  function decodeLayer(d) {
    var n = d.n, g = d.g, geoms = [], i, j, k;
    if (g.t === "geojson") {
      geoms = g.g;
    } else {
      var xy = decodeCoords(g.e || "", g.s), at = 0, ci = 0, ri = 0;
      var take = function (m) { var s = xy.slice(at, at + m); at += m; return s; };
      for (i = 0; i < n; i++) {
        if (g.t === "point") { geoms.push({type: "Point", coordinates: xy[i]}); continue; }
        var np = g.p ? g.p[i] : 1, parts = [];
        for (j = 0; j < np; j++) {
          if (g.t === "line") { parts.push(take(g.c[ci++])); continue; }
          var nr = g.r ? g.r[ri++] : 1, rings = [];
          for (k = 0; k < nr; k++) {
            var ring = take(g.c[ci++]);
            if (ring.length) { ring.push(ring[0]); }
            rings.push(ring);
          }
          parts.push(rings);
        }
        if (g.t === "line") {
          geoms.push(np === 1 ? {type: "LineString", coordinates: parts[0]}
                              : {type: "MultiLineString", coordinates: parts});
        } else {
          geoms.push(np === 1 ? {type: "Polygon", coordinates: parts[0]}
                              : {type: "MultiPolygon", coordinates: parts});
        }
      }
    }
    var features = new Array(n);
    for (i = 0; i < n; i++) {
      var p = {};
      Object.keys(d.k || {}).forEach(function (key) { p[key] = d.k[key]; });
      for (j = 0; j < d.c.length; j++) {
        var col = d.c[j], v = col[3][i];
        if (v === null || v === undefined) { continue; }
        if (col[2]) { v = col[2][v]; }
        p[col[0]] = fmtValue(v, col[1]);
      }
      features[i] = {type: "Feature", geometry: geoms[i], properties: p};
    }
    return {type: "FeatureCollection", features: features};
  }

  function styleFor(spec, feature) {
    var p = feature.properties || {};
    var base = spec.style || {};
    var cls = spec.classKey ? (spec.classes[p[spec.classKey]] || {}) : {};
    var s = {};
    Object.keys(base).forEach(function (k) { s[k] = base[k]; });
    Object.keys(cls).forEach(function (k) { s[k] = cls[k]; });
    if (spec.widthKey && p[spec.widthKey] !== undefined) { s.weight = p[spec.widthKey]; }
    if (spec.dashKey && p[spec.dashKey]) { s.dashArray = "6 4"; }
    if (spec.radiusKey && p[spec.radiusKey] !== undefined) { s.radius = p[spec.radiusKey]; }
    return s;
  }

  function swatch(item) {
    var shape = item.shape || "line";
    var style = "background:" + esc(item.color) + ";";
    if (shape === "line") {
      style = "border-top:" + (item.weight || 3) + "px " + (item.dash ? "dashed " : "solid ") +
        esc(item.color) + ";height:0;margin-top:7px;";
    } else if (shape === "area") {
      style += "opacity:" + (item.opacity || 0.6) + ";border:1px solid " + esc(item.color) + ";";
    } else if (shape === "point") {
      style += "border-radius:50%;width:10px;height:10px;margin:2px 4px;border:1px solid #333;";
    }
    return '<span class="gisnet-swatch gisnet-' + shape + '" style="' + style + '"></span>';
  }

  function control(position, className, html) {
    var C = L.Control.extend({
      onAdd: function () {
        var div = L.DomUtil.create("div", "gisnet-box " + className);
        div.innerHTML = html;
        L.DomEvent.disableClickPropagation(div);
        L.DomEvent.disableScrollPropagation(div);
        return div;
      }
    });
    return new C({position: position});
  }

  function init(map, cfg) {
    var registry = {};
    var specs = {};
    var overlays = {};
    var bases = {};
    var renderer = L.canvas({padding: 0.5});

    if (cfg.empty) { EMPTY = cfg.empty; }
    var container = map.getContainer();
    // Base maps: requested with a referrer policy the tile servers accept (the page's
    // origin when served over http; a file:// page has none to send). When a base map
    // cannot load (offline, or refused), the page says so and keeps drawing the data on a
    // plain background.
    var tileState = {loaded: 0, errors: 0, failed: false};
    var tileNote = null;
    function tilesFailed(name) {
      if (tileState.failed || tileState.loaded) { return; }
      tileState.failed = true;
      container.classList.add("gisnet-no-tiles");
      var msg = "The base map (" + name + ") could not be loaded: no network, or the tile " +
        "server refused the request. The layers are drawn on a plain background.";
      tileNote = control("bottomright", "gisnet-tile-note", esc(msg));
      tileNote.addTo(map);
    }
    (cfg.tiles || []).forEach(function (t, i) {
      var tl = L.tileLayer(t.url, {attribution: t.attribution, maxZoom: 20, maxNativeZoom: 19,
                                   referrerPolicy: cfg.referrerPolicy ||
                                     "strict-origin-when-cross-origin"});
      tl.on("tileload", function () {
        tileState.loaded += 1;
        if (tileState.failed) {
          tileState.failed = false;
          container.classList.remove("gisnet-no-tiles");
          if (tileNote) { map.removeControl(tileNote); tileNote = null; }
        }
      });
      tl.on("tileerror", function () {
        tileState.errors += 1;
        if (tileState.errors >= 2) { tilesFailed(t.name); }
      });
      bases[t.name] = tl;
      if (i === 0) { tl.addTo(map); }
    });
    bases["No base map"] = L.layerGroup();
    if (!cfg.tiles || !cfg.tiles.length) { bases["No base map"].addTo(map); }

    var bounds = null;
    var timings = {};
    var now = function () { return (window.performance && performance.now) ? performance.now() : 0; };
    var helpers = {styleFor: styleFor, popupHtml: popupHtml, fmtValue: fmtValue, esc: esc};
    var firstDraw = {};
    var tiledShown = [];
    var hasTiled = false, indexUrl = null;
    cfg.layers.forEach(function (spec) {
      if (spec.data && spec.data.tiled && window.gisnetTiles) {
        hasTiled = true;
        if (spec.data.tiled.search) { indexUrl = spec.data.tiled.search; }
      }
    });
    cfg.layers.forEach(function (spec) {
      if (spec.data && spec.data.tiled && window.gisnetTiles) {  // drawn from vector tiles
        var tl = window.gisnetTiles.layer(spec, map, helpers);
        tl.once("load", function () { firstDraw[spec.key] = now(); });
        registry[spec.key] = tl;
        specs[spec.key] = spec;
        overlays[esc(spec.name) + ' <span class="gisnet-count">(' + spec.data.n + ")</span>"] = tl;
        if (spec.show !== false) {
          tiledShown.push(tl);  // added once the view is set: no tiles fetched for another
          var tb = spec.data.tiled.bounds;
          if (tb && tb.length === 2) {
            bounds = bounds ? bounds.extend(L.latLngBounds(tb)) : L.latLngBounds(tb);
          }
        }
        return;
      }
      var t0 = now();
      var fc = decodeLayer(spec.data);
      var t1 = now();
      var layer = L.geoJSON(fc, {
        renderer: renderer,
        interactive: spec.interactive !== false,
        style: function (f) { return styleFor(spec, f); },
        pointToLayer: function (f, latlng) {
          var s = styleFor(spec, f);
          s.renderer = renderer;
          s.interactive = spec.interactive !== false;
          return L.circleMarker(latlng, s);
        },
      });
      // on a page with tiled layers, an area (the connection zone, a small status class)
      // gives a click to the tiled feature under it: gisnet-tiles.js opens the popup
      var under = hasTiled && spec.data && spec.data.g && spec.data.g.t === "polygon";
      if (spec.interactive !== false && under) {
        layer.gisnetUnder = true;
        layer.on("click", function (e) {
          var l = e.propagatedFrom || e.layer;
          if (e.originalEvent && l && l.feature) {
            e.originalEvent.gisnetUnder = {spec: spec, props: l.feature.properties || {}};
          }
        });
      } else if (spec.interactive !== false) {
        // one popup and one tooltip for the whole layer, filled for the feature under the mouse
        layer.bindPopup(function (l) { return popupHtml(spec, l.feature.properties || {}); },
                        {maxWidth: 360});
      }
      if (spec.interactive !== false) {
        if (spec.tooltip) {
          layer.bindTooltip(function (l) {
            return fill(spec.tooltip, merged(spec, l.feature.properties));
          }, {sticky: true});
        }
      }
      registry[spec.key] = layer;
      specs[spec.key] = spec;
      var label = esc(spec.name) + ' <span class="gisnet-count">(' + layer.getLayers().length +
        ")</span>";
      overlays[label] = layer;
      var t2 = now();
      if (spec.show !== false) {
        layer.addTo(map);
        if (spec.fit !== false && layer.getLayers().length) {
          var b = layer.getBounds();
          bounds = bounds ? bounds.extend(b) : L.latLngBounds(b.getSouthWest(), b.getNorthEast());
        }
      }
      timings[spec.key] = {decode: t1 - t0, build: t2 - t1, add: now() - t2};
    });

    // title
    var t = '<div class="gisnet-title">' + esc(cfg.title) + "</div>";
    if (cfg.subtitle) { t += '<div class="gisnet-subtitle">' + esc(cfg.subtitle) + "</div>"; }
    if (cfg.note) { t += '<div class="gisnet-note">' + esc(cfg.note) + "</div>"; }
    if (cfg.links && cfg.links.length) {
      t += '<div class="gisnet-links">' + cfg.links.map(function (l) {
        return '<a href="' + esc(l.href) + '">' + esc(l.label) + "</a>";
      }).join(" · ") + "</div>";
    }
    control("topleft", "gisnet-titlebox", t).addTo(map);

    // search
    var searchable = cfg.layers.filter(function (s) {
      return s.search && s.search.length && !(s.data && s.data.tiled);
    });
    if (searchable.length || indexUrl) {
      var placeholder = cfg.searchPlaceholder || "Search parcel id or address";
      var sc = control("topleft", "gisnet-search",
        '<input type="search" class="gisnet-search-input" placeholder="' + esc(placeholder) +
        '"/> <button type="button" class="gisnet-search-go">Find</button>' +
        '<div class="gisnet-search-msg"></div>');
      sc.addTo(map);
      var box = sc.getContainer();
      var input = box.querySelector("input");
      var go = function () { find(input.value); };
      box.querySelector("button").addEventListener("click", go);
      input.addEventListener("keydown", function (e) { if (e.key === "Enter") { go(); } });
    }

    function matchesBoth(query) {
      var q = String(query || "").trim().toLowerCase();
      var exact = [], partial = [];
      if (!q) { return {exact: exact, partial: partial}; }
      searchable.forEach(function (spec) {
        registry[spec.key].eachLayer(function (l) {
          var p = l.feature.properties || {};
          spec.search.forEach(function (k) {
            if (p[k] === undefined || p[k] === null) { return; }
            var v = String(p[k]).toLowerCase();
            if (v === q) { exact.push([spec, l]); } else if (v.indexOf(q) >= 0) { partial.push([spec, l]); }
          });
        });
      });
      return {exact: exact, partial: partial};
    }

    function matches(query) {
      var m = matchesBoth(query);
      return m.exact.length ? m.exact : m.partial;
    }

    function say(text) {
      var msg = document.querySelector(".gisnet-search-msg");
      if (msg) { msg.textContent = text; }
    }

    function showEmbedded(hits) {
      say(hits.length > 1 ? hits.length + " matches, showing the first" : "");
      var spec = hits[0][0], l = hits[0][1];
      var layer = registry[spec.key];
      if (!map.hasLayer(layer)) { layer.addTo(map); updateLegend(); }
      if (l.getLatLng) { map.setView(l.getLatLng(), 18, {animate: false}); }
      else { map.fitBounds(l.getBounds(), {maxZoom: 18, animate: false}); }
      var html = popupHtml(spec, l.feature.properties || {});
      var where = l.getLatLng ? l.getLatLng() : l.getBounds().getCenter();
      L.popup({maxWidth: 360}).setLatLng(where).setContent(html).openOn(map);
      return hits.length;
    }

    // the search index of the tiled layers (gisnet.maps.search_index), fetched as needed
    var indexFetch = {manifest: null, shards: {}};
    function getJSON(url) {
      return fetch(url).then(function (r) {
        if (!r.ok) { throw new Error(url + ": " + r.status); }
        return r.json();
      });
    }
    function hex(text) {
      var b = new TextEncoder().encode(text), h = "";
      for (var i = 0; i < b.length; i++) { h += (b[i] < 16 ? "0" : "") + b[i].toString(16); }
      return h;
    }
    function indexed(query) {
      var q = String(query || "").trim().toLowerCase();
      if (!indexFetch.manifest) { indexFetch.manifest = getJSON(indexUrl); }
      return indexFetch.manifest.then(function (m) {
        var base = indexUrl.replace(/[^\/]*$/, "");
        var want = Object.keys(m.shards).filter(function (s) {
          return s.indexOf(q) === 0 || q.indexOf(s) === 0;
        });
        var total = want.reduce(function (t, s) { return t + m.shards[s]; }, 0);
        if (total > 50000) { return {m: m, exact: [], hits: [], more: true}; }
        return Promise.all(want.map(function (s) {
          if (!indexFetch.shards[s]) {
            indexFetch.shards[s] = getJSON(base + "search-" + hex(s) + ".json");
          }
          return indexFetch.shards[s];
        })).then(function (lists) {
          var exact = [], partial = [];
          lists.forEach(function (list) {
            list.forEach(function (e) {
              var lyr = registry[m.layers[e[1]]];
              if (!lyr || !lyr.gisnetTiled) { return; }
              var v = String(e[0]).toLowerCase();
              if (v === q) { exact.push(e); } else if (v.indexOf(q) === 0) { partial.push(e); }
            });
          });
          return {m: m, exact: exact, hits: exact.length ? exact : partial};
        });
      });
    }
    /* Zoom to an indexed feature, wait for its tile, open its popup from the tile. */
    function showIndexed(m, hits) {
      var shown = hits.filter(function (e) { return map.hasLayer(registry[m.layers[e[1]]]); });
      var pick = shown.length ? shown[0] : hits[0];
      var key = m.layers[pick[1]], field = m.fields[pick[2]], value = String(pick[0]);
      say(hits.length > 1 ? hits.length + " matches, showing the first" : "");
      var layer = registry[key];
      if (!map.hasLayer(layer)) { layer.addTo(map); updateLegend(); }
      var ll = L.latLng(pick[4], pick[3]);
      map.setView(ll, 18, {animate: false});
      return new Promise(function (resolve) {
        var t0 = now();
        (function attempt() {
          var hit = tiledAt ? tiledAt(ll, key, function (p) {
            return String(p[field]) === value; }) : null;
          if (hit) {
            L.popup({maxWidth: 360}).setLatLng(ll)
              .setContent(window.gisnetTiles.hitHtml(hit, helpers)).openOn(map);
            resolve(hits.length);
            return;
          }
          if (now() - t0 > 20000) {
            say("Found " + value + ", but its tile did not load");
            resolve(0);
            return;
          }
          setTimeout(attempt, 100);
        })();
      });
    }

    /* Find a feature by id or address: the page's own layers (exact, then partial); on a
     * tiled page an exact value in the page, then the index of the tiled layers (exact,
     * then by prefix), then a part of a value in the page. Returns
     * the number of matches, or on a tiled page a Promise of it. */
    function find(query) {
      var own = matchesBoth(query);
      if (own.exact.length || !indexUrl) {
        if (own.exact.length || own.partial.length) {
          return showEmbedded(own.exact.length ? own.exact : own.partial);
        }
        say("Not found: " + query);
        return 0;
      }
      say("Searching\u2026");
      return indexed(query).then(function (ix) {
        if (ix.more && !own.partial.length) {
          say("Too many matches: type more of the id or address");
          return 0;
        }
        if (ix.hits.length) { return showIndexed(ix.m, ix.hits); }  // exact, else prefix
        if (own.partial.length) { return showEmbedded(own.partial); }
        say("Not found: " + query);
        return 0;
      }, function (err) {
        say("The search index could not be read (" + err.message + ")");
        return 0;
      });
    }

    // legend: the groups of the layers on the map, updated when a layer is toggled
    var legend = null;
    function legendHtml() {
      var h = "";
      (cfg.legend || []).forEach(function (group) {
        var keys = group.layers || [];
        var shown = !keys.length || keys.some(function (k) {
          return registry[k] && map.hasLayer(registry[k]);
        });
        if (!shown) { return; }
        h += '<div class="gisnet-legend-group">' + esc(group.title) + "</div>";
        group.items.forEach(function (item) {
          h += '<div class="gisnet-legend-item">' + swatch(item) + esc(item.label) + "</div>";
        });
      });
      return h ? '<div class="gisnet-legend-title">Legend</div>' + h : "";
    }
    function updateLegend() {
      if (!legend) { return; }
      var h = legendHtml();
      legend.getContainer().innerHTML = h;
      legend.getContainer().style.display = h ? "" : "none";
    }
    if (cfg.legend && cfg.legend.length) {
      legend = control("bottomleft", "gisnet-legend", legendHtml());
      legend.addTo(map);
      updateLegend();
      map.on("overlayadd overlayremove", updateLegend);
    }

    (cfg.panels || []).forEach(function (panel) {
      control(panel.position || "topright", "gisnet-panel", panel.html).addTo(map);
    });

    L.control.layers(bases, overlays, {collapsed: cfg.collapsed === true, position: "topright"})
      .addTo(map);

    if (bounds && bounds.isValid()) { map.fitBounds(bounds, {padding: [20, 20]}); }
    else if (cfg.center) { map.setView(cfg.center, cfg.zoom || 14); }
    tiledShown.forEach(function (l) { l.addTo(map); });

    var tiledAt = window.gisnetTiles ?
      window.gisnetTiles.attach(map, registry, specs, helpers) : null;
    window.gisnet = {map: map, layers: registry, specs: specs, find: find, matches: matches,
                     popupHtml: popupHtml, ready: true, timings: timings,
                     tiles: tileState, legend: cfg.legend || [], updateLegend: updateLegend,
                     tiledAt: tiledAt, firstDraw: firstDraw,
                     readyMs: (window.performance && performance.now) ? performance.now() : null};
    return window.gisnet;
  }

  window.gisnetMaps = {init: init, decodeLayer: decodeLayer, decodeCoords: decodeCoords};
})();
