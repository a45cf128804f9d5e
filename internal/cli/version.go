package cli

import (
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// versionInfo is what `pxsubstrate version` reports.
type versionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 && v.Version == "(devel)" {
				v.Version = "(devel) " + s.Value[:12]
			}
		}
	}
	return v
}

func newVersionCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use: "version",
		Example: "  pxsubstrate version\n" +
			"  pxsubstrate version -o json",
		Short: "Print the version of pxsubstrate",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := currentVersion()
			return app.Print(v, func(w io.Writer) {
				_, _ = io.WriteString(w, "pxsubstrate "+v.Version+" ("+v.GoVersion+", "+v.Platform+")\n")
			})
		},
	}
}
