package firewall

import "github.com/agentbox-dev/agentbox/internal/connlog"

// The gateway's record of each connection (docs/gateway.md, "The
// record"): HAProxy writes one line per connection it handled to egress's
// stdout, GatewayLogPrefix then a JSON object, at most GatewayLogBurst in
// any GatewayLogPeriod seconds. internal/connlog owns the record's format
// and reads them.
const (
	// GatewayLogBurst records at most in any GatewayLogPeriod seconds,
	// for all ports together: 5 a second, after a burst of 50, like the
	// refused packets' log (LogRate, LogBurst).
	GatewayLogBurst   = 50
	GatewayLogPeriod  = 10
	GatewayLogPrefix  = connlog.Prefix
	GatewayLogNameMax = connlog.NameMax
	// gatewayLogLen is HAProxy's longest log line: a record with a name
	// of GatewayLogNameMax bytes, each escaped as \u00XX, is under 2,000.
	gatewayLogLen = 4096
)

// The reasons a record gives (its "why"; none for an admitted connection).
const (
	GatewayWhyName       = connlog.WhyName
	GatewayWhyNoName     = connlog.WhyNoName
	GatewayWhyProtocol   = connlog.WhyProtocol
	GatewayWhyTimeout    = connlog.WhyTimeout
	GatewayWhyUnresolved = connlog.WhyUnresolved
)

// gatewayWhys is how the template names the reasons.
type gatewayWhys struct{ Name, NoName, Protocol, Timeout, Unresolved string }

var gatewayWhy = gatewayWhys{GatewayWhyName, GatewayWhyNoName, GatewayWhyProtocol, GatewayWhyTimeout, GatewayWhyUnresolved}
