"""The warcinfo record an export begins with: written by the exporter, recognised and left out
by the importer (which so does not load the exporter and what it reads with)."""

SOFTWARE = "dlweb"
EXPORT_INFO = f"software: {SOFTWARE}\r\nformat: WARC File Format 1.1\r\n".encode()
