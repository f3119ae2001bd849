package atomicfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Options say how durable a Write is. The zero value renames without any
// fsync: atomic, not durable.
type Options struct {
	Sync    bool // fsync the file before the rename
	SyncDir bool // fsync the directory after the rename (the rename is then durable)
	Buffer  int  // bytes of write buffering (0: every Write goes to the file)
	// Fsync replaces (*os.File).Sync for the file and the directory (the
	// fault-injection tests of diskq); nil means Sync.
	Fsync func(*os.File) error
}

func (o Options) fsync(f *os.File) error {
	if o.Fsync != nil {
		return o.Fsync(f)
	}
	return f.Sync()
}

// Write replaces path with what write writes, through path+".tmp" renamed
// over it. On error the temporary is removed and path is unchanged.
func Write(path string, opts Options, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if opts.Buffer > 0 {
		bw := bufio.NewWriterSize(f, opts.Buffer)
		err = write(bw)
		if err == nil {
			err = bw.Flush()
		}
	} else {
		err = write(f)
	}
	if err == nil && opts.Sync {
		err = opts.fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if opts.SyncDir {
		return syncDir(filepath.Dir(path), opts.fsync)
	}
	return nil
}

// WriteBytes replaces path with data, as Write does.
func WriteBytes(path string, data []byte, opts Options) error {
	return Write(path, opts, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SyncDir fsyncs dir, so that the files created, renamed or removed in it
// are durable. A file system that cannot sync a directory (EINVAL) is not
// an error.
func SyncDir(dir string) error { return syncDir(dir, (*os.File).Sync) }

// SyncDirWith is SyncDir with fsync in place of (*os.File).Sync.
func SyncDirWith(dir string, fsync func(*os.File) error) error { return syncDir(dir, fsync) }

func syncDir(dir string, fsync func(*os.File) error) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil
	}
	return err
}
