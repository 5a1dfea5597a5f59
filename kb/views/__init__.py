"""HTTP views, one module per area: pages, browse, health, API."""
