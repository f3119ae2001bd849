package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrel-crawler/petrel/internal/benchexchange"
	"github.com/petrel-crawler/petrel/internal/cluster"
)

func benchExchangeCmd() *cobra.Command {
	var o benchexchange.Options
	var role, keyFile, bind, peer string
	cmd := &cobra.Command{
		Use:   "exchange",
		Short: "Benchmark the URL exchange between two agents on loopback (outbox, HTTP/2 over TLS, inbox fsync, apply)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if role == "receiver" {
				k, err := cluster.ReadKeyFile(keyFile)
				if err != nil {
					return err
				}
				o.Key, o.Bind = k, netip.MustParseAddrPort(bind)
				return benchexchange.RunReceiver(cmd.Context(), o, os.Stdout)
			}
			return runBenchExchange(cmd, o)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.URLs, "urls", 5_000_000, "URLs sent")
	fs.IntVar(&o.BatchURLs, "batch-urls", 32768, "URLs per batch (a batch stays under 4 MiB)")
	fs.IntVar(&o.Senders, "senders", 4, "goroutines routing URLs")
	fs.StringVar(&o.Dir, "dir", "", "scratch directory (default: a temporary one)")
	fs.StringVar(&role, "role", "", "internal: run as the receiving side")
	fs.StringVar(&keyFile, "key-file", "", "internal: the receiver's key")
	fs.StringVar(&bind, "bind", "127.215.0.2:7946", "internal: the receiver's address")
	fs.StringVar(&peer, "sender-bind", "127.215.0.1:7946", "the sender's membership address")
	fs.MarkHidden("role")
	fs.MarkHidden("key-file")
	_ = peer
	return cmd
}

func runBenchExchange(cmd *cobra.Command, o benchexchange.Options) error {
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "petrel-bench-exchange-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	keyFile := filepath.Join(dir, "key")
	if err := cluster.WriteKeyFile(keyFile); err != nil {
		return err
	}
	k, err := cluster.ReadKeyFile(keyFile)
	if err != nil {
		return err
	}
	recvBind := cmd.Flags().Lookup("bind").Value.String()
	sendBind := cmd.Flags().Lookup("sender-bind").Value.String()
	var out bytes.Buffer
	args := []string{"bench", "exchange", "--role", "receiver",
		"--key-file", keyFile, "--bind", recvBind, "--dir", filepath.Join(dir, "recv"),
		"--urls", fmt.Sprint(o.URLs), "--batch-urls", fmt.Sprint(o.BatchURLs)}
	if p := cmd.Flags().Lookup("cpuprofile"); p != nil && p.Value.String() != "" {
		args = append(args, "--cpuprofile", p.Value.String()+".receiver") // the sender's is the file named
	}
	child := exec.CommandContext(cmd.Context(), os.Args[0], args...)
	child.Stdout, child.Stderr = &out, os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	o.Key, o.Dir = k, filepath.Join(dir, "send")
	o.Bind, o.Peer = netip.MustParseAddrPort(sendBind), netip.MustParseAddrPort(recvBind)
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	send, start, err := benchexchange.RunSender(cmd.Context(), o)
	if err != nil {
		child.Process.Kill()
		child.Wait()
		return err
	}
	var after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err := child.Wait(); err != nil {
		return fmt.Errorf("receiver: %v", err)
	}
	var recv benchexchange.Side
	if err := json.Unmarshal(out.Bytes(), &recv); err != nil {
		return fmt.Errorf("receiver said %q: %v", out.String(), err)
	}
	cpu := func(ru *syscall.Rusage) time.Duration {
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	sendCPU := cpu(&after) - cpu(&before)
	recvCPU := cpu(child.ProcessState.SysUsage().(*syscall.Rusage))
	elapsed := time.Unix(0, recv.DoneNanos).Sub(start).Seconds()
	res := map[string]any{
		"date": time.Now().UTC().Format(time.RFC3339), "urls": o.URLs, "batch_urls": o.BatchURLs,
		"mean_url_bytes": send.MeanLen, "seconds": elapsed, "urls_per_second": float64(o.URLs) / elapsed,
		"sender": map[string]any{"batches": send.Batches, "wire_bytes": send.Bytes, "bytes_per_url": float64(send.Bytes) / float64(o.URLs),
			"fsyncs": send.Fsyncs, "fsyncs_per_second": float64(send.Fsyncs) / elapsed, "cpu_us_per_url": sendCPU.Seconds() * 1e6 / float64(o.URLs),
			"generate_cpu_us_per_url": send.GenerateCPU.Seconds() * 1e6 / float64(o.URLs),
			"exchange_cpu_us_per_url": (sendCPU - 2*send.GenerateCPU).Seconds() * 1e6 / float64(o.URLs),
			"note":                    "cpu_us_per_url is the whole sending process's (start-up, etcd, and making every URL twice: once alone to measure it, once to route it); exchange_cpu_us_per_url leaves the two makings out"},
		"receiver": map[string]any{"batches": recv.Batches, "inbox_bytes": recv.Bytes, "fsyncs": recv.Fsyncs,
			"fsyncs_per_second": float64(recv.Fsyncs) / elapsed, "cpu_us_per_url": recvCPU.Seconds() * 1e6 / float64(o.URLs),
			"note": "CPU of the whole receiving process, start-up and the embedded etcd included"},
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
