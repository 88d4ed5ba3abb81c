"""twinnet: controller/analysis."""
