package wire

// Version is Primer's version: the server's, and the version the SDKs
// (sdk/python, sdk/typescript) are published under, so an SDK names the
// server it was made for. e2e's SDK tests check the SDKs' manifests say it.
const Version = "0.1.0"
