package benchcrawl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// variantName is the crawler name of the Petrel crawl with Options.Variant.
const variantName = "petrel+variant"

// variantTarget is the CPU per page a variant may cost over the plain
// crawl: the budget of a feature that is on for a whole crawl.
const variantTarget = 1.10

// runVariant crawls the web with Petrel and the flags of o.Variant.
func runVariant(ctx context.Context, o Options, web *webProc, dir string) RunResult {
	res := RunResult{Crawler: variantName, PagesChecked: -1}
	_ = os.RemoveAll(dir)
	args := append(petrelArgs(o, web, dir, o.MaxURLs, filepath.Base(dir)), strings.Fields(o.Variant)...)
	res.Command = o.Petrel + " " + strings.Join(args, " ")
	var elapsed atomic.Int64
	pr := runMeasured(ctx, petrelSpec(o, args, &elapsed))
	res.petrelDone(o, pr, dir, time.Duration(elapsed.Load()))
	return res
}
