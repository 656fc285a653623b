package wire

// MaxKeyDepth is how deep a key may sit under its root: a key at this
// depth may not mint another. It bounds the chain authentication walks.
const MaxKeyDepth = 16

// APIKeyNode is one key of a key tree listing: the key and how deep it
// sits under the first listed key above it (0: a root of the listing).
type APIKeyNode struct {
	APIKey
	Depth int `json:"depth"`
}
