package credlint

import (
	"strings"

	"github.com/pxsubstrate/pxsubstrate/strictyaml"
)

// KindCloudConfig is the upstream CCM and CSI charts' Secret: one key,
// config.yaml, holding a clusters list.
const KindCloudConfig Kind = "ccm-csi-config"

// cloudConfigKey is the key of the upstream charts' Secret.
const cloudConfigKey = "config.yaml"

// cloudConfig is the Proxmox CCM's and CSI plugin's cloud config, as far
// as credentials go; features are theirs to judge.
type cloudConfig struct {
	Clusters []cloudCluster `json:"clusters"`
	Features map[string]any `json:"features,omitempty"`
}

// cloudCluster is one entry of clusters.
type cloudCluster struct {
	URL             string `json:"url"`
	Insecure        bool   `json:"insecure,omitempty"`
	TokenID         string `json:"token_id,omitempty"`
	TokenIDFile     string `json:"token_id_file,omitempty"`
	TokenSecret     string `json:"token_secret,omitempty"`
	TokenSecretFile string `json:"token_secret_file,omitempty"`
	Username        string `json:"username,omitempty"`
	Password        string `json:"password,omitempty"`
	Region          string `json:"region"`
}

// cloudConfig lints config.yaml: it must parse strictly, hold at least one
// cluster, and each cluster is checked as a CCM/CSI Secret's keys are,
// its findings keyed config.yaml:clusters[i].<key>.
func (l *linter) cloudConfig() {
	var c cloudConfig
	if err := strictyaml.Unmarshal([]byte(l.s.Data[cloudConfigKey]), &c); err != nil {
		msg := "config.yaml is not a cloud config (clusters: [{url, token_id, token_secret, region}])"
		if fields := strictyaml.FieldErrors(err); len(fields) > 0 {
			msg += ": " + fieldsMessage(fields)
		}
		l.add(cloudConfigKey, Error, "BadCloudConfig", msg, "write config.yaml as the Proxmox CCM documents it")
		return
	}
	if len(c.Clusters) == 0 {
		l.add(cloudConfigKey, Error, "NoClusters", "config.yaml lists no cluster: the CCM and CSI have nothing to talk to", "add a clusters entry with url, token_id, token_secret and region")
		return
	}
	for i, cl := range c.Clusters {
		prefix := sprintf("%s:clusters[%d].", cloudConfigKey, i)
		data := cl.data()
		_, inline := data["token_id"]
		sub := &linter{s: Secret{Namespace: l.s.Namespace, Name: l.s.Name, Data: data}, tokenElsewhere: !inline}
		switch {
		case cl.Username != "" || cl.Password != "":
			sub.add("username", Warning, "PasswordLogin", "the cluster logs in with a user's password, which reaches everything the user does", "create an API token for the CCM/CSI and use token_id and token_secret")
		case cl.TokenIDFile != "" || cl.TokenSecretFile != "":
			sub.add("token_id_file", Warning, "TokenInFiles", "the token is read from files at run time, which this lint cannot check", "check the files the Pod mounts, or put token_id and token_secret here")
		}
		sub.cloud()
		for _, f := range sub.out {
			f.Key = prefix + f.Key
			l.out = append(l.out, f)
		}
	}
}

// fieldsMessage names the keys a strict decode refused: `unknown key
// "clusters[0].Token_ID" (did you mean "token_id"?)`, `duplicate key "url"`.
func fieldsMessage(fields []*strictyaml.FieldError) string {
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		switch {
		case f.Duplicate:
			parts = append(parts, sprintf("duplicate key %q", f.Path))
		case f.Suggestion != "":
			parts = append(parts, sprintf("unknown key %q (did you mean %q?)", f.Path, f.Suggestion))
		default:
			parts = append(parts, sprintf("unknown key %q", f.Path))
		}
	}
	return strings.Join(parts, ", ")
}

// data is the cluster as a CCM/CSI Secret's keys; credentials kept in
// files or a password leave the token keys out.
func (c cloudCluster) data() map[string]string {
	d := map[string]string{"url": c.URL, "region": c.Region}
	if c.TokenIDFile == "" && c.TokenSecretFile == "" && c.Username == "" && c.Password == "" {
		d["token_id"], d["token_secret"] = c.TokenID, c.TokenSecret
	}
	return d
}

// singleCluster returns the one cluster of a cloud config with an inline
// token, for the probe.
func singleCluster(s Secret) (cloudCluster, bool) {
	var c cloudConfig
	if strictyaml.Unmarshal([]byte(s.Data[cloudConfigKey]), &c) != nil || len(c.Clusters) != 1 {
		return cloudCluster{}, false
	}
	cl := c.Clusters[0]
	return cl, strings.TrimSpace(cl.TokenID) != "" && strings.TrimSpace(cl.TokenSecret) != ""
}
