// Ingest: the HTTP edge. See Server/, Routes/ and Events/.
internal import CMicroHTTPD
internal import CZlib
internal import CZstd
