"""The switch's P4Runtime service: gRPC server, arbitration, entity translation, P4Info lookups."""
