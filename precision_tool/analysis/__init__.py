"""Matching, metrics, whole-network compare, checks for `ac`. No printing, no shell imports."""
