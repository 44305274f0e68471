"""Temporary: parcel flows until gisnet.flows is its own module."""

from .capacity import parcel_flows

__all__ = ["parcel_flows"]
