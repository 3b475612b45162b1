package vocab

// PushKind is the kind of an asynchronous line the server sends a
// subscriber (spec §A.1); parse.AppendPush writes its word.
type PushKind uint8

const (
	PushNone   PushKind = iota
	PushSignal          // "sig <channel> <payload>" (§B.9)
	PushWatch           // "watch <event> <key>" (§B.10)
	PushLeader          // "leader <event> <name>" (§B.12)
	NumPushKinds
)
