package firewall

// The gateway's record of each connection (docs/gateway.md, "The
// record"): HAProxy writes one line per connection it handled to egress's
// stdout, GatewayLogPrefix then a JSON object, at most GatewayLogBurst in
// any GatewayLogPeriod seconds; internal/connlog reads them.
const (
	// GatewayLogBurst records at most in any GatewayLogPeriod seconds,
	// for all ports together: 5 a second, after a burst of 50, like the
	// refused packets' log (LogRate, LogBurst).
	GatewayLogBurst  = 50
	GatewayLogPeriod = 10
	// GatewayLogNameMax bytes of the name the agent sent are recorded; the
	// record holds its whole length too.
	GatewayLogNameMax = 255
	// gatewayLogLen is HAProxy's longest log line: a record with a name
	// of GatewayLogNameMax bytes, each escaped as \u00XX, is under 2,000.
	gatewayLogLen = 4096
)

// The reasons a record gives (its "why"; none for an admitted connection).
const (
	GatewayWhyName       = "name"       // the name is not allowed on the port
	GatewayWhyNoName     = "no_name"    // a ClientHello without SNI, an HTTP request without Host
	GatewayWhyProtocol   = "protocol"   // neither a ClientHello nor an HTTP request head
	GatewayWhyTimeout    = "timeout"    // no complete ClientHello or request head within the inspect delay
	GatewayWhyUnresolved = "unresolved" // the filter resolver gave no address for the name
)

// gatewayWhys is how the template names the reasons.
type gatewayWhys struct{ Name, NoName, Protocol, Timeout, Unresolved string }

var gatewayWhy = gatewayWhys{GatewayWhyName, GatewayWhyNoName, GatewayWhyProtocol, GatewayWhyTimeout, GatewayWhyUnresolved}
