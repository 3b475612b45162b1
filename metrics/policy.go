package metrics

import (
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/session"
)

// collectPolicy sends the policy's metrics, when the hub has a policy. The
// identity label takes only names a policy file defined (the hub keeps
// figures for those alone), so its cardinality is the policy's, never a
// client's choice.
func (c *collector) collectPolicy(gauge func(string, float64, ...string), counter func(string, uint64, ...string)) {
	p := c.src.Hub.Policy()
	if p == nil {
		return
	}
	gauge("dflockd_policy_info", 1, p.Version)
	gauge("dflockd_policy_identities", float64(len(p.Identities())))
	for _, u := range c.src.Hub.Usages() {
		gauge("dflockd_identity_connections", float64(u.Conns.Load()), u.Name)
		for cl := range policy.NumClasses {
			if n := u.Denied[cl].Load(); n > 0 {
				counter("dflockd_denied_total", n, u.Name, policy.Class(cl).String())
			}
		}
		for k := range session.NumQuotaKinds {
			n := c.src.Hub.QuotaExceeded(u, k)
			if n > 0 {
				counter("dflockd_quota_exceeded_total", n, u.Name, session.QuotaKindNames[k])
			}
		}
	}
}
