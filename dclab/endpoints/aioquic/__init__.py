"""aioquic: our HTTP/3 server and client on aioquic's asyncio API."""
