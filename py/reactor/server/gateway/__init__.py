"""The site's model behind the server: its configuration, the allowance, the streaming relay."""
