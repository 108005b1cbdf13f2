package netlab

import "github.com/agentbox-dev/agentbox/internal/testing/dnswire"

// The lab's DNS messages are internal/dnswire's, the one codec of the test
// infrastructure; these names keep the lab's code short.
const (
	TypeA     = dnswire.TypeA
	TypeTXT   = dnswire.TypeTXT
	TypeAAAA  = dnswire.TypeAAAA
	TypeCNAME = dnswire.TypeCNAME
	TypeDNAME = dnswire.TypeDNAME

	RcodeSuccess  = dnswire.RcodeSuccess
	RcodeServFail = dnswire.RcodeServFail
	RcodeNXDomain = dnswire.RcodeNXDomain
	RcodeRefused  = dnswire.RcodeRefused
)

type (
	Question = dnswire.Question
	Answer   = dnswire.Answer
	Reply    = dnswire.Reply
)

var (
	ParseType  = dnswire.ParseType
	RcodeName  = dnswire.RcodeName
	BuildQuery = dnswire.BuildQuery
	ParseQuery = dnswire.ParseQuery
	BuildReply = dnswire.BuildReply
	ParseReply = dnswire.ParseReply
)
