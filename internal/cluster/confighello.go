package cluster

import (
	"context"
	"errors"
	"net/http"
)

// helloMember says hello to m. An agent that was away when the crawl
// committed a config epoch (down, or cut off, at the commit) is refused by
// a member comparing the newer values; when the refusal names a config
// epoch above this agent's, the agent takes the crawl's values from that
// member (GET /v1/config, committed here as any commit: the host applies
// them, they are saved and gossiped), logs the epochs old → new, and says
// hello again. A difference the crawl's values do not explain (a setting
// given otherwise on this agent's command line) is still refused.
func (n *Node) helloMember(ctx context.Context, m Member) (*HelloReply, error) {
	rep, err := n.hello(ctx, m.Meta.Exchange)
	var se *StatusError
	if err == nil || rep == nil || !errors.As(err, &se) || se.Code != http.StatusConflict || rep.ConfigEpoch <= n.ConfigEpoch() {
		return rep, err
	}
	if _, ok := n.host.(ConfigHost); !ok {
		return rep, err
	}
	s, ferr := n.fetchConfig(ctx, m.Meta.Exchange)
	old := n.ConfigEpoch()
	if ferr != nil || s.Epoch <= old {
		return rep, err
	}
	n.log.Info("cluster: the crawl committed cluster-wide settings while this agent was away; taking them",
		"from", m.Name, "config_epoch_old", old, "config_epoch_new", s.Epoch, "values", s.Values)
	if cerr := n.commitConfig(ctx, s); cerr != nil {
		n.log.Error("cluster: catch up cluster-wide settings at hello", "err", cerr)
		return rep, err
	}
	return n.hello(ctx, m.Meta.Exchange)
}
