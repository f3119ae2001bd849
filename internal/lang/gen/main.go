// Command gen trains internal/lang's model on the translations Debian
// ships as .mo files and writes it (model.bin). From the module's root:
//
//	go run ./internal/lang/gen [-locale /usr/share/locale] [-o internal/lang/model.bin]
//
// or go generate ./internal/lang. It trains on the families of translation
// domains the benchmark (`petrel bench lang`) does not measure on; see
// internal/lang's doc.go.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/petrel-crawler/petrel/internal/lang"
)

func main() {
	var o lang.TrainOptions
	out := flag.String("o", "internal/lang/model.bin", "the model file to write")
	flag.StringVar(&o.Locale, "locale", "/usr/share/locale", "directory of translations (<locale>/LC_MESSAGES/*.mo)")
	flag.IntVar(&o.MinBytes, "min-bytes", 5000, "training text a language needs to be in the model")
	flag.IntVar(&o.Grams, "grams", 3000, "grams kept of each language, its most frequent")
	flag.Parse()
	var b bytes.Buffer
	codes, err := lang.WriteModel(o, &b)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d bytes, %d languages: %s\n", *out, b.Len(), len(codes), strings.Join(codes, " "))
}
