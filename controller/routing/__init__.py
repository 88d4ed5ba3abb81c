"""twinnet: controller/routing."""
