"""twinnet: emulation/target."""
