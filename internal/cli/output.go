package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Print writes v in the format chosen with -o. For the table format it calls
// table with a tab-aligned writer; a nil table falls back to YAML, which
// reads well for nested values.
func (a *App) Print(v any, table func(w io.Writer)) error {
	switch {
	case a.Format == "json":
		enc := json.NewEncoder(a.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case a.Format == "yaml" || table == nil:
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("cannot render YAML: %w", err)
		}
		_, err = a.Out.Write(b)
		return err
	default:
		tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
		table(tw)
		return tw.Flush()
	}
}
