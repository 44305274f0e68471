/* gisnet web maps: layers drawn from vector tiles (PMTiles archives written by
 * gisnet.maps.tiles) with protomaps-leaflet, styled like the embedded layers of
 * gisnet-maps.js (same colours, widths, dashes; popups on click).
 * Tiles: "features" at the detail zoom (every feature, over-zoomed beyond it) and
 * "overview" below it (merged lines, or squares with the count "n" of features).
 * MIT licence, part of gisnet. */
(function () {
  "use strict";

  var PANE = "gisnetTiles";

  function displayProps(spec, raw, H) {
    var t = spec.data.tiled, out = {};
    Object.keys(t.constants || {}).forEach(function (k) { out[k] = t.constants[k]; });
    Object.keys(raw || {}).forEach(function (k) {
      var v = raw[k], f = (t.formats || {})[k];
      out[k] = f ? H.fmtValue(v, f) : v;
    });
    return out;
  }

  function styler(spec, H) {
    var cache = {};
    return function (f) {
      var p = f.props || {};
      var key = [p[spec.classKey], p[spec.widthKey], p[spec.dashKey], p[spec.radiusKey]].join("|");
      var s = cache[key];
      if (!s) {
        var props = {};
        Object.keys(spec.data.tiled.constants || {}).forEach(function (k) {
          props[k] = spec.data.tiled.constants[k];
        });
        Object.keys(p).forEach(function (k) { props[k] = p[k]; });
        s = cache[key] = H.styleFor(spec, {properties: props});
      }
      return s;
    };
  }

  function num(v, dflt) { return (v === undefined || v === null) ? dflt : Number(v); }

  function rules(spec, H) {
    var P = window.protomapsL, t = spec.data.tiled, st = styler(spec, H);
    var dz = t.detailZoom, out = [];
    var dashed = function (z, f) { return !!st(f).dashArray; };
    var lineRules = function (layer, minzoom, maxzoom) {
      out.push({dataLayer: layer, minzoom: minzoom, maxzoom: maxzoom,
                filter: function (z, f) { return !dashed(z, f); },
                symbolizer: new P.LineSymbolizer({
                  color: function (z, f) { return st(f).color || "#3388ff"; },
                  width: function (z, f) { return num(st(f).weight, 3); },
                  opacity: function (z, f) { return num(st(f).opacity, 1); },
                  lineCap: "round", lineJoin: "round", perFeature: true})});
      out.push({dataLayer: layer, minzoom: minzoom, maxzoom: maxzoom, filter: dashed,
                symbolizer: new P.LineSymbolizer({
                  dash: [6, 4],
                  dashColor: function (z, f) { return st(f).color || "#3388ff"; },
                  dashWidth: function (z, f) { return num(st(f).weight, 3); },
                  opacity: function (z, f) { return num(st(f).opacity, 1); },
                  perFeature: true})});
    };
    if (t.family === "line") {
      lineRules("features", dz, undefined);
      lineRules("overview", undefined, dz - 1);
      return out;
    }
    if (t.family === "polygon") {
      out.push({dataLayer: "features", minzoom: dz, symbolizer: new P.PolygonSymbolizer({
        fill: function (z, f) { var s = st(f); return s.fillColor || s.color || "#3388ff"; },
        opacity: function (z, f) { return num(st(f).fillOpacity, 0.2); },
        perFeature: true})});
      out.push({dataLayer: "features", minzoom: dz, symbolizer: new P.LineSymbolizer({
        color: function (z, f) { return st(f).color || "#3388ff"; },
        width: function (z, f) { return num(st(f).weight, 1); },
        opacity: function (z, f) { return num(st(f).opacity, 1); },
        perFeature: true})});
    } else {
      out.push({dataLayer: "features", minzoom: dz, symbolizer: new P.CircleSymbolizer({
        radius: function (z, f) { return num(st(f).radius, 4); },
        fill: function (z, f) { return st(f).fillColor || st(f).color || "#3388ff"; },
        stroke: function (z, f) { return st(f).color || "#333333"; },
        width: function (z, f) { return num(st(f).weight, 1); },
        opacity: function (z, f) { return num(st(f).fillOpacity, 0.9); }})});
    }
    // overview: density squares in the layer's colour
    var base = spec.style || {};
    var colour = base.fillColor || base.color || "#3388ff";
    if (spec.classKey && spec.classes) {  // one class everywhere: its colour
      var only = (spec.data.tiled.constants || {})[spec.classKey];
      if (only && spec.classes[only]) {
        colour = spec.classes[only].fillColor || spec.classes[only].color || colour;
      }
    }
    out.push({dataLayer: "overview", maxzoom: dz - 1, symbolizer: new P.PolygonSymbolizer({
      fill: colour,
      opacity: function (z, f) {
        var m = (t.overviewMax || {})[String(Math.round(z))] || 1;
        return Math.min(0.85, 0.2 + 0.65 * Math.sqrt(num(f.props.n, 0) / m));
      },
      perFeature: true})});
    return out;
  }

  /* A Leaflet layer drawing spec's tiles. H: helpers of gisnet-maps.js. */
  function layer(spec, map, H) {
    if (!map.getPane(PANE)) {
      map.createPane(PANE);
      map.getPane(PANE).style.zIndex = 350;  // over the base map, under embedded layers
      map.getPane(PANE).style.pointerEvents = "none";
    }
    var t = spec.data.tiled;
    var lyr = window.protomapsL.leafletLayer({
      url: t.url, paintRules: rules(spec, H), labelRules: [], levelDiff: 0,
      maxDataZoom: t.detailZoom, pane: PANE, attribution: "", maxZoom: 22,
      tileDelay: 0});
    // fetch the archive's header and root directory now, while the page is still busy
    // setting up: the layer joins the map only once the view is set
    lyr.views.forEach(function (v) {
      var src = v.tileCache && v.tileCache.source;
      if (src && src.p && src.p.getHeader) { src.p.getHeader().catch(function () {}); }
    });
    lyr.gisnetSpec = spec;
    lyr.gisnetTiled = true;
    return lyr;
  }

  /* The popup of a tiled hit (a feature, or an overview square). */
  function hitHtml(hit, H) {
    if (hit.layerName === "overview" && hit.props.n !== undefined) {
      return '<div class="gisnet-popup"><b>' + H.esc(hit.spec.name) + "</b><div>" +
        H.esc(H.fmtValue(hit.props.n, ["n", 0, ""])) +
        " in this square; zoom in to see each one.</div></div>";
    }
    return H.popupHtml(hit.spec, displayProps(hit.spec, hit.props, H));
  }

  /* Popups for tiled features: the topmost tiled layer with a feature under the click.
   * An embedded layer marked gisnetUnder (an area such as the connection zone) gives the
   * click to the tiled feature under it, and opens its own popup only where there is none. */
  function attach(map, registry, specs, H) {
    var tiled = Object.keys(registry).filter(function (k) { return registry[k].gisnetTiled; });
    if (!tiled.length) { return; }
    Object.keys(registry).forEach(function (k) {
      if (!registry[k].gisnetTiled && !registry[k].gisnetUnder && registry[k].on) {
        registry[k].on("click", function (e) {
          if (e.originalEvent) { e.originalEvent.gisnetHit = true; }
        });
      }
    });
    /* The hit at latlng: in layer onlyKey (else any shown tiled layer, topmost first),
     * the last feature whose properties (constants merged) pass accept (else any). */
    function at(latlng, onlyKey, accept) {
      for (var i = tiled.length - 1; i >= 0; i--) {
        if (onlyKey && tiled[i] !== onlyKey) { continue; }
        var lyr = registry[tiled[i]];
        if (!map.hasLayer(lyr)) { continue; }
        var brush = lyr.gisnetSpec.data.tiled.family === "polygon" ? 1 : 6;
        var found = lyr.queryTileFeaturesDebug(latlng.lng, latlng.lat, brush);
        var hits = [];
        found.forEach(function (arr) { hits = hits.concat(arr); });
        for (var j = hits.length - 1; j >= 0; j--) {
          var props = hits[j].feature.props || {};
          if (accept && !(hits[j].layerName === "features" &&
                          accept(displayProps(lyr.gisnetSpec, props, {fmtValue: function (v) {
                            return v; }})))) { continue; }
          return {key: tiled[i], spec: lyr.gisnetSpec, layerName: hits[j].layerName,
                  props: props};
        }
      }
      return null;
    }
    map.on("click", function (e) {
      var ev = e.originalEvent || {};
      if (ev.gisnetHit) { return; }
      var hit = at(e.latlng);
      if (!hit) {
        if (ev.gisnetUnder) {
          L.popup({maxWidth: 360}).setLatLng(e.latlng)
            .setContent(H.popupHtml(ev.gisnetUnder.spec, ev.gisnetUnder.props)).openOn(map);
        }
        return;
      }
      L.popup({maxWidth: 360}).setLatLng(e.latlng).setContent(hitHtml(hit, H)).openOn(map);
    });
    return at;
  }

  window.gisnetTiles = {layer: layer, attach: attach, displayProps: displayProps,
                        hitHtml: hitHtml};
})();
