package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

const (
	closeWait    = 3 * time.Second // at most this long to close the connections after printing
	lateGrace    = time.Second     // after the deadline, for the workers to notice it
	watchdogPast = closeWait + 2*time.Second
	maxTimeout   = 1e7      // seconds (116 days): far within time.Duration
	readBuffer   = 32 << 10 // body bytes read at once (counted, then dropped)
	// The server may open no bidirectional stream: HTTP/3 requests are the client's.
	clientIncomingStreams = -1
	// quic-go's receive windows, kept at its defaults (its protocol constants: auto-tuned
	// from 512 KiB up to these), reported in the "stack" object.
	maxStreamWindow     = 6 << 20
	maxConnectionWindow = 15 << 20
)

type clientArgs struct {
	host, workload, cc, ca string
	port                   int
	timeout                float64
	endOptions
}

// object is one object's progress; times are seconds after the request (t0).
type object struct {
	mu           sync.Mutex
	index, conn  int
	size         int64
	pathSize     int64      // GET /<pathSize>
	rng          *[2]int64  // ranged: the bytes asked for (first, last), inclusive
	bytes        int64      // body bytes read
	status       int        // 0: no response yet
	contentRange *string    // the response's content-range, if any
	requestS     *float64   // handed to the library
	firstS       *float64   // first body byte read
	lastS        float64    // last body byte read (when firstS is set): no allocation per read
	err          string     // why it failed ("" if it did not)
	done         bool       // the body ended
	timedOut     bool       // the deadline ended it
	connection   *connState // its connection
}

// connState is one connection as the JSON line reports it.
type connState struct {
	mu         sync.Mutex
	handshakeS *float64
	resumed    *bool
	gso        *bool
	handshake  bool // completed
	udp        *net.UDPConn
}

// objectJSON is base.ObjectResult; connJSON is base.ConnectionResult.
type objectJSON struct {
	Index      int      `json:"index"`
	Size       int64    `json:"size"`
	Connection int      `json:"connection"`
	Bytes      int64    `json:"bytes"`
	OK         bool     `json:"ok"`
	RequestS   *float64 `json:"request_s"`
	FirstByteS *float64 `json:"first_byte_s"`
	LastByteS  *float64 `json:"last_byte_s"`
	Error      *string  `json:"error"`
}

type connJSON struct {
	Index      int      `json:"index"`
	HandshakeS *float64 `json:"handshake_s"`
	FirstByteS *float64 `json:"first_byte_s"`
	LastByteS  *float64 `json:"last_byte_s"`
	Bytes      int64    `json:"bytes"`
	Resumed    *bool    `json:"resumed"`
	EarlyData  *bool    `json:"early_data"`
}

// result is the one JSON line (h3_client.py's Run.to_dict plus "stack").
type result struct {
	OK            bool           `json:"ok"`
	Bytes         int64          `json:"bytes"`
	RequestS      float64        `json:"request_s"`
	HandshakeS    *float64       `json:"handshake_s"`
	FirstByteS    *float64       `json:"first_byte_s"`
	LastByteS     *float64       `json:"last_byte_s"`
	Error         *string        `json:"error"`
	RequestWall   *float64       `json:"request_wall"`
	Objects       []objectJSON   `json:"objects"`
	Connections   []connJSON     `json:"connections"`
	Warmup        any            `json:"warmup"`
	ReadyMono     *float64       `json:"ready_mono"`
	CPUS          *float64       `json:"cpu_s"`
	WorkloadError *string        `json:"workload_error"`
	Stack         map[string]any `json:"stack"`
}

// runState is the whole workload: what it saw so far, and printing it once.
type runState struct {
	args    *clientArgs
	wl      *workload
	objects []*object
	conns   []*connState

	// t0 is written before the workers start or (preconnect) before they are released.
	t0 time.Time

	mu          sync.Mutex // the fields below
	deadline    time.Time  // of the whole workload (zero: not started)
	requestWall *float64
	readyMono   *float64
	readyCPU    *float64
	workloadErr string
	printed     bool
}

func newRun(args *clientArgs, wl *workload) *runState {
	r := &runState{args: args, wl: wl, t0: time.Now()}
	if wl == nil {
		return r
	}
	for range wl.Conns {
		r.conns = append(r.conns, &connState{})
	}
	ranges := wl.byteRanges()
	for i, s := range wl.Objects {
		o := &object{index: i, conn: wl.connectionOf(i), size: s, pathSize: s, rng: ranges[i]}
		if wl.Ranged {
			o.pathSize = wl.total()
		}
		o.connection = r.conns[o.conn]
		r.objects = append(r.objects, o)
	}
	return r
}

func ptr[T any](v T) *T { return &v }

func (r *runState) since() float64 { return time.Since(r.t0).Seconds() }

// setRequest takes now as the workload's request (t0).
func (r *runState) setRequest() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t0 = time.Now()
	r.requestWall = ptr(float64(r.t0.UnixNano()) / 1e9)
}

func (r *runState) setWorkloadError(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.workloadErr == "" {
		r.workloadErr = msg
	}
}

func (r *runState) timeoutReason(handshake bool) string {
	why := fmt.Sprintf("timeout after %s s", strconv.FormatFloat(r.args.timeout, 'g', -1, 64))
	if !handshake {
		why += " before the handshake completed"
	}
	return why
}

// result is Obj.result() of h3_client.py.
func (o *object) result(r *runState, expired bool) objectJSON {
	o.mu.Lock()
	defer o.mu.Unlock()
	want := http.StatusOK
	if o.rng != nil {
		want = http.StatusPartialContent
	}
	wrongRange := ""
	if o.rng != nil && o.contentRange != nil {
		expected := fmt.Sprintf("bytes %d-%d/%d", o.rng[0], o.rng[1], o.pathSize)
		if *o.contentRange != expected {
			wrongRange = fmt.Sprintf("content-range %q, asked %q", *o.contentRange, expected)
		}
	}
	ok := o.err == "" && o.done && o.status == want && o.bytes == o.size && wrongRange == ""
	msg := o.err
	if !ok && msg == "" {
		o.connection.mu.Lock()
		handshake := o.connection.handshake
		o.connection.mu.Unlock()
		switch {
		case o.status != 0 && o.status != want:
			msg = fmt.Sprintf("HTTP status %d (wanted %d)", o.status, want)
		case wrongRange != "":
			msg = wrongRange
		case !o.done && (o.timedOut || expired):
			msg = r.timeoutReason(handshake)
		case !o.done && o.requestS == nil:
			msg = "never requested"
		default:
			msg = fmt.Sprintf("got %d of %d bytes", o.bytes, o.size)
		}
	}
	out := objectJSON{Index: o.index, Size: o.size, Connection: o.conn, Bytes: o.bytes, OK: ok,
		RequestS: o.requestS, FirstByteS: o.firstS}
	if o.firstS != nil {
		out.LastByteS = ptr(o.lastS)
	}
	if !ok {
		out.Error = &msg
	}
	return out
}

// toResult is the JSON line; its totals are base.TransferResult.from_parts'.
func (r *runState) toResult() result {
	r.mu.Lock()
	expired := !r.deadline.IsZero() && !time.Now().Before(r.deadline)
	r.mu.Unlock()
	objs := make([]objectJSON, len(r.objects))
	for i, o := range r.objects {
		objs[i] = o.result(r, expired)
	}
	conns := make([]connJSON, len(r.conns))
	for c, cs := range r.conns {
		cs.mu.Lock()
		conns[c] = connJSON{Index: c, HandshakeS: cs.handshakeS, Resumed: cs.resumed}
		cs.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []string
	if r.workloadErr != "" {
		errs = append(errs, r.workloadErr)
	}
	var failed []objectJSON
	for _, o := range objs {
		if !o.OK {
			failed = append(failed, o)
		}
	}
	if len(failed) > 0 {
		first := failed[0]
		what := fmt.Sprintf("object %d (/%d on connection %d): %s", first.Index, first.Size, first.Connection, *first.Error)
		if len(failed) > 1 {
			what = fmt.Sprintf("%d of %d objects failed, first %s", len(failed), len(objs), what)
		}
		errs = append(errs, what)
	}
	if len(objs) == 0 {
		errs = append(errs, "no objects")
	}
	res := result{Objects: objs, Connections: conns, RequestWall: r.requestWall, ReadyMono: r.readyMono,
		Stack: r.stackInfo()}
	minOf := func(a *float64, b *float64) *float64 {
		if a == nil || (b != nil && *b < *a) {
			return b
		}
		return a
	}
	maxOf := func(a *float64, b *float64) *float64 {
		if a == nil || (b != nil && *b > *a) {
			return b
		}
		return a
	}
	for i := range conns {
		c := &conns[i]
		for _, o := range objs {
			if o.Connection == c.Index {
				c.Bytes += o.Bytes
				c.FirstByteS = minOf(c.FirstByteS, o.FirstByteS)
				c.LastByteS = maxOf(c.LastByteS, o.LastByteS)
			}
		}
	}
	for _, o := range objs {
		res.Bytes += o.Bytes
		res.FirstByteS = minOf(res.FirstByteS, o.FirstByteS)
		res.LastByteS = maxOf(res.LastByteS, o.LastByteS)
	}
	if len(conns) > 0 {
		res.HandshakeS = conns[0].HandshakeS
	}
	res.OK = len(errs) == 0
	if !res.OK {
		res.Error = ptr(joinErrors(errs))
	}
	if r.workloadErr != "" {
		res.WorkloadError = ptr(r.workloadErr)
	}
	if r.readyCPU != nil {
		res.CPUS = ptr(cpuSeconds() - *r.readyCPU)
	}
	return res
}

func joinErrors(errs []string) string {
	out := ""
	for i, e := range errs {
		if i > 0 {
			out += "; "
		}
		out += e
	}
	return out
}

// stackInfo is what the client tells of quic-go and its sockets (r.mu held).
func (r *runState) stackInfo() map[string]any {
	info := map[string]any{
		"library": libraryName, "version": libraryVersion(), "go": runtime.Version(), "cc": ccReno,
	}
	if r.args == nil {
		return info
	}
	if r.args.maxDatagram != 0 {
		info["max_datagram_size"] = r.args.maxDatagram
		info["path_mtu_discovery"] = false
		info["initial_datagram_size"] = r.args.maxDatagram
	} else {
		info["max_datagram_size"] = maxDatagram // what path MTU discovery may reach
		info["path_mtu_discovery"] = true
		info["initial_datagram_size"] = defaultInitialDatagram
	}
	if v := gsoSetting(); v != "" {
		info["QUIC_GO_DISABLE_GSO"] = v
	}
	info["max_stream_receive_window"] = maxStreamWindow
	info["max_connection_receive_window"] = maxConnectionWindow
	var rcv, snd []any
	var gso []any
	for _, c := range r.conns {
		c.mu.Lock()
		if c.udp != nil {
			if a, b, err := socketBuffers(c.udp); err == nil {
				rcv, snd = append(rcv, a), append(snd, b)
			} else {
				rcv, snd = append(rcv, nil), append(snd, nil)
			}
		} else {
			rcv, snd = append(rcv, nil), append(snd, nil)
		}
		if c.gso != nil {
			gso = append(gso, *c.gso)
		} else {
			gso = append(gso, nil)
		}
		c.mu.Unlock()
	}
	info["so_rcvbuf"] = rcv // getsockopt(SO_RCVBUF) of each connection's socket, after quic-go raised it
	info["so_sndbuf"] = snd
	info["gso"] = gso // quic-go's ConnectionState().GSO of each connection (sending side)
	return info
}

// emit prints the JSON line once (from the workload or the watchdog); returns ok.
func (r *runState) emit() bool {
	res := r.toResult()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.printed {
		r.printed = true
		line, err := json.Marshal(res)
		if err != nil {
			line = []byte(`{"ok": false, "error": "cannot encode the result", "objects": [], "connections": []}`)
		}
		_, _ = os.Stdout.Write(append(line, '\n'))
	}
	return res.OK
}

func clientMain(argv []string) int {
	args := &clientArgs{}
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&args.host, "host", "", "server address")
	fs.IntVar(&args.port, "port", 4433, "server UDP port")
	fs.StringVar(&args.workload, "workload", "", "workload file (JSON, base.Workload.to_dict)")
	fs.StringVar(&args.cc, "cc", ccReno, "congestion control (quic-go: reno only)")
	fs.StringVar(&args.ca, "ca", "", "certificate to trust (the server's self-signed one)")
	fs.Float64Var(&args.timeout, "timeout", 600, "give up after this many seconds")
	fs.StringVar(&args.qlogDir, "qlog-dir", "", "one qlog file per connection here")
	fs.StringVar(&args.keylog, "keylog", "", "append TLS secrets (NSS key log format)")
	fs.IntVar(&args.maxDatagram, "max-datagram-size", 0, "fixed UDP payload size (no path MTU discovery)")

	var wl *workload
	bad := func(msg string) int {
		r := newRun(args, wl)
		r.setWorkloadError(msg)
		r.emit()
		fmt.Fprintf(os.Stderr, "dclab-quicgo client: %s\n", msg)
		return 2
	}
	if err := fs.Parse(argv); err != nil {
		return bad(err.Error())
	}
	if fs.NArg() > 0 {
		return bad(fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if args.workload == "" {
		return bad("--workload: required")
	}
	loaded, err := loadWorkload(args.workload)
	if err != nil {
		return bad(err.Error())
	}
	wl = loaded
	if refused := wl.refusals(); len(refused) > 0 {
		return bad(joinErrors(refused))
	}
	if msg := ccError(args.cc); msg != "" {
		return bad(msg)
	}
	if msg := datagramError(args.maxDatagram); msg != "" {
		return bad(msg)
	}
	if !(args.timeout > 0) || args.timeout > maxTimeout {
		return bad(fmt.Sprintf("--timeout: must be a number of seconds > 0 and at most %g (got %g)", float64(maxTimeout), args.timeout))
	}
	if args.host == "" {
		return bad("--host: required")
	}
	if args.port < 1 || args.port > 65535 {
		return bad(fmt.Sprintf("--port: must be 1 to 65535 (got %d)", args.port))
	}
	pem, err := os.ReadFile(args.ca)
	if err != nil {
		return bad(fmt.Sprintf("--ca: %v", err))
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return bad(fmt.Sprintf("--ca: no PEM certificate in %s", args.ca))
	}
	tlsConf := &tls.Config{RootCAs: roots, ServerName: args.host, NextProtos: []string{http3.NextProtoH3}}
	if args.keylog != "" {
		f, err := openKeylog(args.keylog)
		if err != nil {
			return bad(err.Error())
		}
		defer func() { _ = f.Close() }()
		tlsConf.KeyLogWriter = f
	}
	var ql *qlogs
	if args.qlogDir != "" {
		if ql, err = newQlogs(args.qlogDir); err != nil {
			return bad(err.Error())
		}
	}
	timeout := time.Duration(args.timeout * float64(time.Second))
	run := newRun(args, wl)

	// Whatever quic-go does, the process prints and ends a little after the deadline.
	dog := time.AfterFunc(timeout+watchdogPast, func() {
		run.setWorkloadError(fmt.Sprintf("timeout after %s s (watchdog)", strconv.FormatFloat(args.timeout, 'g', -1, 64)))
		run.emit()
		os.Exit(1)
	})
	closers := run.workload(tlsConf, ql, timeout)
	ok := run.emit()
	code := 1
	if ok {
		code = 0
	}
	// Measurement done: close (sends CONNECTION_CLOSE, finishes the qlogs). The line is
	// out, so from now on the watchdog only ends the process, with its exit status.
	dog.Stop()
	backstop := time.AfterFunc(closeWait+time.Second, func() { os.Exit(code) })
	defer backstop.Stop()
	closeBy := time.Now().Add(closeWait)
	closed := make(chan struct{})
	go func() {
		for _, c := range closers {
			c()
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(closeWait):
	}
	ql.wait(time.Until(closeBy))
	return code
}

// workload runs every connection; returns what closes them.
func (r *runState) workload(tlsConf *tls.Config, ql *qlogs, timeout time.Duration) []func() {
	args, wl := r.args, r.wl
	raddr, err := net.ResolveUDPAddr("udp", net.JoinHostPort(args.host, strconv.Itoa(args.port)))
	if err != nil {
		r.setWorkloadError(fmt.Sprintf("--host: %v", err))
		return nil
	}
	network, local := "udp4", &net.UDPAddr{IP: net.IPv4zero}
	if raddr.IP.To4() == nil {
		network, local = "udp6", &net.UDPAddr{IP: net.IPv6unspecified}
	}
	// quic-go's own timeouts lie beyond the workload's deadline, so that the deadline ends
	// a workload (and says so); a connection idle for a minute still ends before it.
	past := timeout + 5*time.Second
	qconf := &quic.Config{
		Versions:             []quic.Version{quic.Version1}, // http3 dials one version
		MaxIncomingStreams:   clientIncomingStreams,
		HandshakeIdleTimeout: past,
		MaxIdleTimeout:       min(time.Minute, past),
	}
	applyDatagram(qconf, args.maxDatagram)
	if ql != nil {
		qconf.Tracer = ql.tracer
	}
	// One UDP socket and quic.Transport per connection, made before the request.
	transports := make([]*quic.Transport, wl.Conns)
	var closers []func()
	for c := range transports {
		udp, err := net.ListenUDP(network, local)
		if err != nil {
			r.setWorkloadError(fmt.Sprintf("socket: %v", err))
			return closers
		}
		r.conns[c].mu.Lock()
		r.conns[c].udp = udp
		r.conns[c].mu.Unlock()
		transports[c] = &quic.Transport{Conn: udp}
		tr := transports[c]
		closers = append(closers, func() { _ = tr.Close() })
	}

	// The workload's request: the measured connections start now (preconnect: their
	// handshakes start now and the request comes when they all ended). ready_mono and the
	// CPU count start here in both cases, as in h3_client.py: the process is ready to send.
	r.setRequest()
	start := r.t0
	r.mu.Lock()
	r.readyMono, r.readyCPU = ptr(monotonic()), ptr(cpuSeconds())
	r.deadline = start.Add(timeout)
	r.mu.Unlock()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(timeout))
	defer cancel()

	perConn := make([][]*object, wl.Conns)
	for _, o := range r.objects {
		perConn[o.conn] = append(perConn[o.conn], o)
	}
	release := make(chan struct{}) // preconnect: closed when the requests go out
	var handshakes, workers sync.WaitGroup
	var connMu sync.Mutex
	for c := range transports {
		handshakes.Add(1)
		workers.Add(1)
		go func(c int) {
			defer workers.Done()
			qc := r.connection(ctx, c, transports[c], raddr, tlsConf, qconf, perConn[c], &handshakes, release)
			if qc != nil {
				connMu.Lock()
				closers = append([]func(){func() { _ = qc.CloseWithError(0, "") }}, closers...)
				connMu.Unlock()
			}
		}(c)
	}
	if wl.Preconnect {
		waitUntil(&handshakes, ctx)
		r.setRequest()
		close(release)
	}
	waitUntil(&workers, ctx)
	if ctx.Err() != nil {
		// The deadline passed: the workers see it (their reads end); give them a moment.
		late, stop := context.WithTimeout(context.Background(), lateGrace)
		waitUntil(&workers, late)
		stop()
	}
	connMu.Lock()
	defer connMu.Unlock()
	return append([]func(){}, closers...)
}

// waitUntil waits for wg or for ctx to end.
func waitUntil(wg *sync.WaitGroup, ctx context.Context) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// connection dials connection c and fetches its objects; returns the connection (nil if
// the handshake failed).
func (r *runState) connection(ctx context.Context, c int, tr *quic.Transport, raddr *net.UDPAddr, tlsConf *tls.Config,
	qconf *quic.Config, objs []*object, handshakes *sync.WaitGroup, release <-chan struct{}) *quic.Conn {
	cs := r.conns[c]
	dialed := time.Now()
	qc, err := tr.Dial(ctx, raddr, tlsConf.Clone(), qconf)
	now := time.Now()
	handshakes.Done()
	if err != nil {
		why := fmt.Sprintf("handshake failed: %v", err)
		if ctx.Err() != nil {
			why = r.timeoutReason(false)
		}
		if r.wl.Preconnect {
			why = "preconnect: " + why
		}
		for _, o := range objs {
			o.fail(why, ctx.Err() != nil)
		}
		return nil
	}
	state := qc.ConnectionState()
	cs.mu.Lock()
	cs.handshake = true
	if r.wl.Preconnect {
		cs.handshakeS = ptr(now.Sub(dialed).Seconds()) // a duration: the request comes later
	} else {
		cs.handshakeS = ptr(now.Sub(r.t0).Seconds())
	}
	cs.resumed = ptr(state.TLS.DidResume)
	cs.gso = ptr(state.GSO)
	cs.mu.Unlock()

	h3 := (&http3.Transport{DisableCompression: true}).NewClientConn(qc)
	if r.wl.Preconnect {
		select {
		case <-release:
		case <-ctx.Done():
			for _, o := range objs {
				o.fail("preconnect: "+r.timeoutReason(true), true)
			}
			return qc
		}
	}
	authority := net.JoinHostPort(r.args.host, strconv.Itoa(r.args.port))
	if r.wl.Streams == "sequential" {
		for _, o := range objs {
			r.fetch(ctx, h3, authority, o)
		}
		return qc
	}
	var wg sync.WaitGroup
	for _, o := range objs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.fetch(ctx, h3, authority, o)
		}()
	}
	wg.Wait()
	return qc
}

func (o *object) fail(why string, timedOut bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == "" && !o.done {
		o.err, o.timedOut = why, timedOut
	}
}

// fetch requests one object and counts its body.
func (r *runState) fetch(ctx context.Context, h3 *http3.ClientConn, authority string, o *object) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s/%d", authority, o.pathSize), nil)
	if err != nil {
		o.fail(err.Error(), false)
		return
	}
	req.Header.Set("User-Agent", "dclab-quicgo")
	if o.rng != nil {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", o.rng[0], o.rng[1]))
	}
	o.mu.Lock()
	o.requestS = ptr(r.since())
	o.mu.Unlock()
	resp, err := h3.RoundTrip(req)
	if err != nil {
		o.failWith(r, ctx, "request", err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	o.mu.Lock()
	o.status = resp.StatusCode
	if v, ok := resp.Header["Content-Range"]; ok && len(v) > 0 {
		o.contentRange = &v[0]
	}
	o.mu.Unlock()
	buf := make([]byte, readBuffer)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			t := r.since()
			o.mu.Lock()
			if o.firstS == nil {
				o.firstS = ptr(t)
			}
			o.bytes += int64(n)
			o.lastS = t
			o.mu.Unlock()
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			o.failWith(r, ctx, "body", err)
			return
		}
	}
	t := r.since()
	o.mu.Lock()
	if o.bytes == 0 { // an empty body: its first and last byte are its end
		o.firstS, o.lastS = ptr(t), t
	}
	o.done = true
	o.mu.Unlock()
}

// failWith ends an object with err, or with the timeout if the deadline ended it.
func (o *object) failWith(r *runState, ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		o.connection.mu.Lock()
		handshake := o.connection.handshake
		o.connection.mu.Unlock()
		o.fail(r.timeoutReason(handshake), true)
		return
	}
	o.fail(fmt.Sprintf("%s: %v", what, describe(err)), false)
}

// describe says what a quic-go error means, where its text alone does not.
func describe(err error) string {
	var app *quic.ApplicationError
	if errors.As(err, &app) {
		by := "the client"
		if app.Remote {
			by = "the server"
		}
		return fmt.Sprintf("connection closed by %s: %v", by, err)
	}
	var stream *quic.StreamError
	if errors.As(err, &stream) {
		return fmt.Sprintf("stream reset: %v", err)
	}
	return err.Error()
}
