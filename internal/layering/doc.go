// Package layering holds no code: its tests keep the library's import
// layering, docs/embedding.md and README.md's layout list true. vlanalloc
// and its test kit import only the standard library; ovngateway imports
// only libovsdb, what libovsdb itself imports, and the standard library.
package layering
