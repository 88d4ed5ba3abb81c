"""The ``twinnet-switch`` process: ports, priority queues, data plane loop, side channel, command line."""
