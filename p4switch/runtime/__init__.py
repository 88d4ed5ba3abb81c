"""What a compiled program runs on: packet and extern support, match-action tables, the v1model pipeline."""
