package pvefake

import (
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"
)

// downloadURL is POST .../download-url: a "download" worker fetches the URL
// into the storage as an iso, vztmpl or import volume, verifying a checksum
// when given. compression is for ISOs only; for import the worker fails
// with "decompression not supported for import", as PVE's does.
func downloadURL(c *call) (any, *apiError) {
	st, err := c.storageOnNode()
	if err != nil {
		return nil, err
	}
	if !st.fileBased() {
		return nil, die("can't upload to storage type '%s', not a file based storage!", st.typ)
	}
	content := c.p["content"]
	if !st.content[content] {
		return nil, die("storage '%s' is not configured for content-type '%s'", st.id, content)
	}
	filename := normalizeFilename(c.p["filename"])
	format, perr := downloadFormat(content, filename)
	if perr != nil {
		return nil, perr
	}
	d := download{url: c.p["url"], verify: c.p.flag("verify-certificates", true), compression: c.p["compression"],
		algo: c.p["checksum-algorithm"], want: strings.ToLower(c.p["checksum"]), content: content, format: format,
		volid: st.id + ":" + content + "/" + filename, storage: st.id}
	return c.startTask("download", encodeWorkerID(filename), func(l *taskLog) error { return c.runDownload(d, l) }), nil
}

func downloadFormat(content, filename string) (string, *apiError) {
	switch content {
	case "iso":
		if !isoExtRe.MatchString(filename) {
			return "", paramErr("filename", "wrong file extension")
		}
		return "iso", nil
	case "vztmpl":
		if !vztmplExtRe.MatchString(filename) {
			return "", paramErr("filename", "wrong file extension")
		}
		return filename[strings.LastIndexByte(filename, '.')+1:], nil
	}
	m := importExtRe.FindStringSubmatch(filename)
	if m == nil {
		return "", paramErr("filename", "invalid filename or wrong extension")
	}
	return m[1], nil
}

// encodeWorkerID keeps ':' and whitespace out of a UPID field (encode_text).
func encodeWorkerID(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ':' || c <= ' ' || c > '~' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

type download struct {
	url, content, format, volid, storage string
	verify                               bool
	compression, algo, want              string
}

// runDownload fetches with the server unlocked, so that slow transfers do
// not stall other requests, and records the volume once it is complete.
func (c *call) runDownload(d download, l *taskLog) error {
	if d.compression != "" && d.content != "iso" {
		return fmt.Errorf("decompression not supported for %s", d.content)
	}
	if _, ok := c.s.volume(c.node, d.volid); ok {
		return fmt.Errorf("refusing to override existing file '%s'", d.volid)
	}
	l.printf("downloading %s to %s", d.url, d.volid)
	c.srv.mu.Unlock()
	size, sum, err := fetch(c.r.Context(), c.srv.cfg.downloader, d)
	c.srv.mu.Lock()
	if err != nil {
		return err
	}
	if d.want != "" {
		l.printf("calculating checksum...")
		if sum != d.want {
			return fmt.Errorf("checksum mismatch: got '%s' != expect '%s'", sum, d.want)
		}
		l.printf("OK, checksum verified")
	}
	if _, ok := c.s.volume(c.node, d.volid); ok {
		return fmt.Errorf("refusing to override existing file '%s'", d.volid)
	}
	c.s.putVolume(c.node, &volume{volid: d.volid, storage: d.storage, vtype: d.content, format: d.format,
		size: size, ctime: c.s.now().Unix()})
	l.printf("download of '%s' to '%s' finished", d.url, d.volid)
	return nil
}

// fetch downloads and, for ISOs with gz or bz2 compression, decompresses;
// it returns the stored size and the checksum (of the downloaded bytes).
// zst and lzo ISOs are stored as downloaded.
func fetch(ctx context.Context, dl Downloader, d download) (uint64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	body, err := dl.Download(ctx, d.url, d.verify)
	if err != nil {
		return 0, "", err
	}
	defer body.Close()
	var r io.Reader = body
	h := hashes[d.algo]
	var sum interface{ Sum([]byte) []byte }
	if h != nil {
		hh := h()
		r, sum = io.TeeReader(body, hh), hh
	}
	switch d.compression {
	case "gz":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return 0, "", fmt.Errorf("decompression failed: %w", err)
		}
		r = zr
	case "bz2":
		r = bzip2.NewReader(r)
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return 0, "", fmt.Errorf("download failed: %w", err)
	}
	got := ""
	if sum != nil {
		got = hex.EncodeToString(sum.Sum(nil))
	}
	return uint64(n), got, nil
}
