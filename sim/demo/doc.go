// Package demo is the story `pxsubstrate demo` tells: a sequence of named
// acts played on the simulator (package sim) and printed as short tables,
// ending with a table of invariants checked on the final world. Each act
// lives in its own file and adds itself to Acts in order; a later concern
// adds its act the same way.
//
// The demo needs no flags and no cluster: everything runs in memory with a
// fake clock. It never reads the machine's environment and never touches a
// network.
package demo
