"""Routing as per-card tables, their analysis, and the P4Runtime controller that installs them."""
