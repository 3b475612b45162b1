// Package vocab is the vocabulary every side of the server shares: the
// commands (Op) with the profiles that know them, the reply statuses with
// their wire words, the profiles, the parsed Request, the push kinds and
// the stats document's content.
//
// It holds names and plain data only, no behaviour: parse turns bytes
// into these values and these values into reply lines; the engine gives
// them meaning; the transports and the HTTP API pass them along. Because
// both parse and engine import vocab and neither imports the other, the
// engine stays free of wire encoding and parse of lock semantics.
//
// Each command and each status is named once, in commands.go and
// status.go; every reply word on the wire and in the HTTP API's JSON
// comes from those tables.
package vocab
