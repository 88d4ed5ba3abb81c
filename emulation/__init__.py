"""Mininet emulation of twin-switch networks, traffic, path measurement, and the twinnet command line."""
