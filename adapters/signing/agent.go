package signing

import (
	"bytes"
	"context"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// agentSession is one connection to ssh-agent, open for one Sign.
type agentSession struct {
	socket  string
	conn    net.Conn
	stop    func() bool
	signers []ssh.Signer
}

// dialAgent connects to the agent at socket and lists its keys. Cancelling
// ctx closes the connection, which ends a request the agent is holding
// (one waiting for the person to confirm, with ssh-add -c).
func dialAgent(ctx context.Context, socket string) (*agentSession, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, usagef("cannot reach ssh-agent at %s (%v): start it (eval $(ssh-agent)) and ssh-add your key, or check SSH_AUTH_SOCK", socket, err)
	}
	a := &agentSession{socket: socket, conn: conn}
	a.stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
	a.signers, err = agent.NewClient(conn).Signers()
	if err != nil {
		a.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("listing the keys of ssh-agent at %s: %w", socket, err)
	}
	return a, nil
}

// close ends the session; it may be called on a nil session.
func (a *agentSession) close() {
	if a == nil {
		return
	}
	a.stop()
	_ = a.conn.Close()
}

// signer returns the agent's signer for key, or nil when the agent does
// not hold it.
func (a *agentSession) signer(key ssh.PublicKey) ssh.Signer {
	blob := key.Marshal()
	for _, s := range a.signers {
		if bytes.Equal(s.PublicKey().Marshal(), blob) {
			return s
		}
	}
	return nil
}
