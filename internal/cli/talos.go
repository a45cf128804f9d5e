package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// schematicAdvice is what to do with a schematic file of several documents.
const schematicAdvice = "keep the schematic and remove the other documents"

func init() { register(newTalosCmd) }

func newTalosCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "talos",
		Short: "Talos Image Factory helpers",
	}
	cmd.AddCommand(newSchematicIDCmd(app))
	return cmd
}

// schematicIDResult is what `pxsubstrate talos schematic-id` reports.
type schematicIDResult struct {
	ID string `json:"id"`
	// Schematic is the canonical text the ID is the SHA-256 of.
	Schematic  string   `json:"schematic"`
	Extensions []string `json:"extensions,omitempty"`
}

func newSchematicIDCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:     "schematic-id FILE",
		Example: "  pxsubstrate talos schematic-id schematic.yaml",
		Short:   "Print the Image Factory schematic ID of a schematic (YAML or JSON; - reads stdin)",
		Long: `Computes the ID the Talos Image Factory gives a schematic: the document is
decoded strictly (unknown fields are errors), written again as canonical YAML
and hashed with SHA-256. Lists keep their order, as on the factory's API.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			data, err := readInput(app, args[0])
			if err != nil {
				return err
			}
			s, err := talostemplate.ParseSchematic(data)
			if err != nil {
				return fmt.Errorf("cannot compute the schematic ID of %s: %w", args[0], oneDocument(err, schematicAdvice))
			}
			canon, err := s.Canonical()
			if err != nil {
				return fmt.Errorf("cannot compute the schematic ID of %s: %w", args[0], err)
			}
			id, err := s.ID()
			if err != nil {
				return fmt.Errorf("cannot compute the schematic ID of %s: %w", args[0], err)
			}
			if _, err := talostemplate.CheckSchematic(id, s, false); errors.Is(err, talostemplate.ErrUnfitSchematic) {
				fmt.Fprintf(app.ErrOut, "Warning: %s\n", escapeControl(err.Error()))
			}
			res := schematicIDResult{ID: id, Schematic: string(canon), Extensions: s.Customization.SystemExtensions.OfficialExtensions}
			return app.Print(res, func(w io.Writer) { fmt.Fprintln(w, id) })
		},
	}
}
