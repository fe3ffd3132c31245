"""A real tus client (tuspy) against the gateway: 1 MiB chunks with sha1 checksums, an
interruption after three chunks, then a new client that resumes from the server's offset; HEAD
returns the Upload-Metadata tuspy created the upload with.
Usage: tus_resume.py BASE_URL TOKEN FILE KEY. Prints the upload URL; exits non-zero on failure."""
import sys

import requests
from tusclient import client

base, token, path, key = sys.argv[1:5]
chunk = 1 << 20
headers = {"Authorization": "Bearer " + token}
metadata = {"key": key, "accessLevel": "private", "filetype": "application/octet-stream"}

first = client.TusClient(base + "/v1/tus/", headers=headers)
uploader = first.uploader(path, chunk_size=chunk, metadata=metadata, upload_checksum=True)
for _ in range(3):
    uploader.upload_chunk()
url = uploader.url
sent = uploader.get_url_creation_headers()["upload-metadata"]
del uploader, first  # the app was closed mid-upload

second = client.TusClient(base + "/v1/tus/", headers=headers)
resumed = second.uploader(path, url=url, chunk_size=chunk, upload_checksum=True)
offset = resumed.get_offset()
if offset != 3 * chunk:
    sys.exit("resumed at %d, expected %d" % (offset, 3 * chunk))
shown = requests.head(url, headers={**headers, "Tus-Resumable": "1.0.0"}).headers.get("Upload-Metadata")
if shown != sent:
    sys.exit("HEAD Upload-Metadata is %r, the upload was created with %r" % (shown, sent))
resumed.upload()
print(url)
