package leader

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The relations between the derived durations that docs/safety.md needs,
// for the defaults and a spread of options. drift is assumption A1: a
// clock runs at most 2.5% faster or slower than real time.
func TestDerivedDurationsKeepTheSafetyInequalities(t *testing.T) {
	const drift = 0.025
	fast := func(d time.Duration) float64 { return float64(d) / (1 + drift) } // shortest real time of d on a node's clock
	slow := func(d time.Duration) float64 { return float64(d) / (1 - drift) } // longest
	for _, o := range []Options{
		{ClusterID: "c"},
		{ClusterID: "c", ElectionTimeoutMin: 1000, ElectionTimeoutMax: 2000, HeartbeatInterval: 300},
		{ClusterID: "c", ElectionTimeoutMin: 30},
		{ClusterID: "c", ElectionTimeoutMin: 3, ElectionTimeoutMax: 5},
		{ClusterID: "c", ElectionTimeoutMin: 150, HeartbeatInterval: 2},
		{ClusterID: "c", AssumeSymmetricConnectionLoss: true},
	} {
		cfg, _, err := o.resolve()
		require.NoError(t, err)
		name := fmt.Sprintf("min %s hb %s symmetric %v", cfg.electionTimeoutMin, cfg.heartbeatInterval, cfg.assumeSymmetricLoss)
		t.Run(name, func(t *testing.T) {
			F := freshness(cfg)
			if cfg.assumeSymmetricLoss == false {
				assert.Less(t, slow(actingLease(cfg)), fast(F), "an acting lease ends before the promise of F after a loss")
				assert.Less(t, livenessInterval(cfg), F/2, "several rounds per window, so one late round costs no IsLeader")
			}
			assert.LessOrEqual(t, actingLease(cfg), holdingLease(cfg))
			assert.Less(t, slow(holdingLease(cfg)), fast(promiseLength(cfg)), "a holding lease ends before a full promise")
			assert.LessOrEqual(t, F, promiseLength(cfg), "a loss only ever shortens a promise")
			assert.Greater(t, fast(quietPeriod(cfg)), slow(promiseLength(cfg)), "a restart outwaits its previous life's promises")
			assert.Greater(t, fast(quietPeriod(cfg)), slow(voteRound(cfg)), "and the vote rounds it granted in")
			assert.Greater(t, hubPeerSilence(cfg), 2*livenessInterval(cfg))
		})
	}
}
