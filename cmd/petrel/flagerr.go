package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/petrel-crawler/petrel/internal/settings"
)

// flagHint is every command's FlagErrorFunc, args the command line after
// the program's name: an error in the flags says what was probably meant.
func flagHint(args []string) func(*cobra.Command, error) error {
	return func(cmd *cobra.Command, err error) error {
		return flagError{explainFlagError(cmd.Flags(), args, err)}
	}
}

// explainFlagError is err, an error parsing args against fs, made plain: a
// long flag written with one dash ("-host-delay", which pflag reads as
// shorthands) is told it takes two, and a misspelt one gets the nearest
// flag's name.
func explainFlagError(fs *pflag.FlagSet, args []string, err error) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && len(name) > 1 && fs.Lookup(name) != nil {
			return errors.New(a + ": flags take two dashes: --" + name)
		}
	}
	if _, after, ok := strings.Cut(err.Error(), "unknown flag: --"); ok {
		var names []string
		fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if best := settings.Nearest(after, names); best != "" {
			return fmt.Errorf("%w (did you mean --%s?)", err, best)
		}
	}
	return err
}
