package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"
	"golang.org/x/sys/unix"
)

const (
	libraryName   = "quic-go"
	libraryModule = "github.com/quic-go/quic-go"
	// quic-go has one congestion controller, NewReno, hard-wired: its sent-packet handler
	// makes every sender with congestion.NewCubicSender(..., true /* use Reno */, ...), an
	// internal package, and quic.Config has no field to choose another.
	ccReno = "reno"
	// quic-go's bounds on the packet size (its protocol constants MinInitialPacketSize,
	// MaxPacketBufferSize); an InitialPacketSize outside them would be silently clamped.
	minDatagram = 1200
	maxDatagram = 1452
	// quic-go's first packet size without --max-datagram-size (its InitialPacketSize).
	defaultInitialDatagram = 1280
)

var offeredCCs = []string{ccReno}

// libraryVersion is the quic-go version this binary was built with (from its build info).
func libraryVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == libraryModule {
				if d.Replace != nil {
					return d.Version + " (replaced)"
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

// ccError names what is wrong with a --cc value ("" when quic-go offers it).
func ccError(cc string) string {
	for _, c := range offeredCCs {
		if cc == c {
			return ""
		}
	}
	return fmt.Sprintf("--cc: quic-go offers only reno (hard-wired NewReno; got %q)", cc)
}

// datagramError names what is wrong with --max-datagram-size (0: not given).
func datagramError(n int) string {
	if n != 0 && (n < minDatagram || n > maxDatagram) {
		return fmt.Sprintf("--max-datagram-size: quic-go sends %d to %d bytes (got %d)", minDatagram, maxDatagram, n)
	}
	return ""
}

// options common to both ends.
type endOptions struct {
	qlogDir     string
	keylog      string
	maxDatagram int
}

// applyDatagram fixes the packet size: start at n and never probe for more.
func applyDatagram(conf *quic.Config, n int) {
	if n != 0 {
		conf.InitialPacketSize = uint16(n)
		conf.DisablePathMTUDiscovery = true
	}
}

// qlogs writes one JSON-SEQ qlog file per connection into dir (as quic-go's own
// qlog.DefaultConnectionTracer does for $QLOGDIR) and knows when they are all written.
type qlogs struct {
	dir  string
	open sync.WaitGroup
}

func newQlogs(dir string) (*qlogs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--qlog-dir: %w", err)
	}
	return &qlogs{dir: dir}, nil
}

func (q *qlogs) tracer(_ context.Context, isClient bool, connID quic.ConnectionID) qlogwriter.Trace {
	role := "server"
	if isClient {
		role = "client"
	}
	f, err := os.Create(filepath.Join(q.dir, fmt.Sprintf("%s_%s.sqlog", connID, role)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "qlog: %v\n", err)
		return nil
	}
	q.open.Add(1)
	seq := qlogwriter.NewConnectionFileSeq(&qlogFile{w: bufio.NewWriterSize(f, 1<<16), f: f, done: q.open.Done}, isClient, connID)
	go seq.Run()
	return seq
}

// wait waits until every qlog file is closed (its connection ended), at most d.
func (q *qlogs) wait(d time.Duration) {
	if q == nil {
		return
	}
	done := make(chan struct{})
	go func() { q.open.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

type qlogFile struct {
	w    *bufio.Writer
	f    *os.File
	done func()
	once sync.Once
}

func (q *qlogFile) Write(b []byte) (int, error) { return q.w.Write(b) }

func (q *qlogFile) Close() error {
	err := q.w.Flush()
	if cerr := q.f.Close(); err == nil {
		err = cerr
	}
	q.once.Do(q.done)
	return err
}

// openKeylog opens the NSS key log file for appending (what SSLKEYLOGFILE names).
func openKeylog(path string) (*os.File, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("--keylog: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--keylog: %w", err)
	}
	return f, nil
}

// socketBuffers reads a UDP socket's effective SO_RCVBUF and SO_SNDBUF (as the kernel
// reports them: twice what was set, for its bookkeeping).
func socketBuffers(c *net.UDPConn) (rcv, snd int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		rcv, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		if serr == nil {
			snd, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		}
	}); err != nil {
		return 0, 0, err
	}
	return rcv, snd, serr
}

// monotonic is CLOCK_MONOTONIC in seconds, the clock of Python's time.monotonic().
func monotonic() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// cpuSeconds is the CPU time this process used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// gsoSetting is what QUIC_GO_DISABLE_GSO says (quic-go reads it when it sets up a socket).
func gsoSetting() string {
	return os.Getenv("QUIC_GO_DISABLE_GSO")
}
