// Command dclab-quicgo is dclab's quic-go stack: an HTTP/3 server of generated bodies and a
// timed client workload printing one JSON line, as dclab/endpoints/json_client.py reads it
// (the same line as dclab/endpoints/aioquic/h3_client.py prints).
//
//	dclab-quicgo server --host ADDR --port P --cert CERT --key KEY --cc reno [--qlog-dir D] [--keylog F] [--max-datagram-size N]
//	dclab-quicgo client --host ADDR --port P --workload FILE --cc reno --ca CERT --timeout S [same options]
//	dclab-quicgo version
package main

import (
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: dclab-quicgo server|client|version [options]")
		return 2
	}
	switch args[0] {
	case "server":
		return serverMain(args[1:])
	case "client":
		return clientMain(args[1:])
	case "version", "--version":
		fmt.Printf("%s %s\n", libraryName, libraryVersion())
		return 0
	default:
		fmt.Fprintf(os.Stderr, "dclab-quicgo: unknown subcommand %q (server, client or version)\n", args[0])
		return 2
	}
}
