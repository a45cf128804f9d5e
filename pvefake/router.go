package pvefake

import (
	"net/http"
	"strings"
)

// handler serves one API method; it runs with the state locked.
type handler func(c *call) (any, *apiError)

// route is one API method: its path with {param} segments ({name*} takes
// the rest of the path), its parameter schema and its declared permission
// check (nil: every authenticated user, PVE's user => 'all').
type route struct {
	method string
	path   string
	schema []param
	extra  func(string) bool
	check  check
	handle handler
	parts  []string
	// upload: the body is a multipart/form-data file upload, read as
	// pveproxy reads one (readUpload).
	upload bool
}

// call is one request being served.
type call struct {
	srv   *Server
	s     *state
	r     *http.Request
	auth  string // authenticated user or full token id
	p     params
	lists lists  // the items of array parameters
	node  string // the {node} path parameter, when the path has one
	total *int
	// upload is the file an upload request carries.
	upload *upload
}

type router struct{ routes []*route }

func (rt *router) add(rs ...*route) {
	for _, r := range rs {
		r.parts = splitPath(r.path)
		rt.routes = append(rt.routes, r)
	}
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// match finds the route of a method and relative path and returns the
// path parameters. A path that exists with another method is still
// "not implemented", as in PVE.
func (rt *router) match(method, rel string) (*route, map[string]string) {
	segs := splitPath(rel)
	for _, r := range rt.routes {
		if r.method != method {
			continue
		}
		if vars, ok := matchParts(r.parts, segs); ok {
			return r, vars
		}
	}
	return nil, nil
}

func matchParts(parts, segs []string) (map[string]string, bool) {
	vars := map[string]string{}
	for i, part := range parts {
		if strings.HasPrefix(part, "{") && strings.HasSuffix(part, "*}") {
			if i >= len(segs) {
				return nil, false
			}
			vars[part[1:len(part)-2]] = strings.Join(segs[i:], "/")
			return vars, true
		}
		if i >= len(segs) {
			return nil, false
		}
		if strings.HasPrefix(part, "{") {
			if segs[i] == "" {
				return nil, false
			}
			vars[part[1:len(part)-1]] = segs[i]
			continue
		}
		if part != segs[i] {
			return nil, false
		}
	}
	return vars, len(parts) == len(segs)
}

// routes lists every method the server implements.
func (srv *Server) routes() *router {
	rt := &router{}
	rt.add(accessRoutes()...)
	rt.add(userRoutes()...)
	rt.add(aclRoutes()...)
	rt.add(poolRoutes()...)
	rt.add(clusterRoutes()...)
	rt.add(mappingRoutes()...)
	rt.add(haRoutes(srv.cfg)...)
	rt.add(qemuRoutes()...)
	rt.add(qemuOpRoutes()...)
	rt.add(powerRoutes()...)
	rt.add(lxcRoutes()...)
	rt.add(storageRoutes()...)
	rt.add(storageConfigRoutes()...)
	rt.add(taskRoutes()...)
	rt.add(sdnRoutes(srv.cfg)...)
	rt.add(nodeNetworkRoutes()...)
	rt.add(nodeSDNRoutes()...)
	return rt
}
