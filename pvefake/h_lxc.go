package pvefake

// lxcRoutes are the container methods on capmox's path: the node's
// container index, as pve-container's vmlist (src/PVE/API2/LXC.pm, commit
// 94f558522ef6) serves it to every user ("user => 'all'") and lists only
// the containers on which the caller holds VM.Audit. The server keeps no
// containers, so every node answers as a node without any: an empty list.
func lxcRoutes() []*route {
	return []*route{
		{method: "GET", path: "/nodes/{node}/lxc", schema: []param{nodeParam}, handle: listContainers},
	}
}

func listContainers(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	return []map[string]any{}, nil
}
