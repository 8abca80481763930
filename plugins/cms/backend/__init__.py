"""The CMS server tier: sites, roles and entries in SQLite, the JSON API, the public pages,
and the guarded crawler. Only `reactor_plugins.cms.server` imports it; the page never does."""
