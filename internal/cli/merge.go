package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
)

func newMergeCmd(env *Env) *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "merge RESULT.json...",
		Short: "Merge load results of several workers into one exact report",
		Long: `Merge JSON load results (meshbench load -o FILE.json) of several load
generators into one: histograms merged exactly, counts summed, time spans
joined. The result is the same as one generator that sent all the load.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format := outputFormat(format, output)
			if !slices.Contains(report.LoadFormats, format) {
				return usagef("--output-format %q: allowed: %s", format, strings.Join(report.LoadFormats, ", "))
			}
			var parts []*results.LoadResult
			var errs []error
			for _, a := range args {
				r, err := results.ReadFile(a)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				parts = append(parts, r)
			}
			if len(errs) > 0 {
				return &UsageError{Err: errors.Join(errs...)}
			}
			merged, err := results.Merge(parts)
			if err != nil {
				return &UsageError{Err: err}
			}
			w := env.Stdout
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return usagef("--output %s: %v", output, err)
				}
				defer f.Close()
				w = f
			}
			if err := report.WriteLoad(w, merged, format); err != nil {
				return fmt.Errorf("writing merged result: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "output-format", "", "text, json, hdr or vegeta-json (default: text; from -o's extension .json/.hdr when given)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	return cmd
}
