package leader

import (
	"errors"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsDefaults(t *testing.T) {
	cfg, warnings, err := Options{ClusterID: "x"}.resolve()
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, 3, cfg.minClusterSize)
	assert.Equal(t, 150*time.Millisecond, cfg.electionTimeoutMin)
	assert.Equal(t, 300*time.Millisecond, cfg.electionTimeoutMax)
	assert.Equal(t, 50*time.Millisecond, cfg.heartbeatInterval)
	assert.Equal(t, 5*time.Second, cfg.ghostTTL)
}

func TestOptionsDeriveTheOtherTimeout(t *testing.T) {
	cfg, _, err := Options{ClusterID: "x", ElectionTimeoutMin: 1000, HeartbeatInterval: 300}.resolve()
	require.NoError(t, err)
	assert.Equal(t, 2000*time.Millisecond, cfg.electionTimeoutMax, "min alone doubles")
	cfg, _, err = Options{ClusterID: "x", ElectionTimeoutMax: 400}.resolve()
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, cfg.electionTimeoutMin, "max alone halves")
}

func TestOptionsInvalid(t *testing.T) {
	cases := []struct {
		options Options
		says    string
	}{
		{Options{}, "ClusterID is empty"},
		{Options{ClusterID: "x", ElectionTimeoutMin: 300, ElectionTimeoutMax: 300}, "must be greater than ElectionTimeoutMin"},
		{Options{ClusterID: "x", ElectionTimeoutMin: 300, ElectionTimeoutMax: 200}, "raise ElectionTimeoutMax"},
		{Options{ClusterID: "x", ElectionTimeoutMax: 1}, "too small to derive"},
		{Options{ClusterID: "x", MinClusterSize: -1}, "MinClusterSize is -1"},
		{Options{ClusterID: "x", GhostTTL: -5}, "GhostTTL is -5"},
	}
	for _, tc := range cases {
		_, _, err := tc.options.resolve()
		require.Error(t, err, "%+v", tc.options)
		assert.True(t, errors.Is(err, ErrInvalidOptions))
		assert.Contains(t, err.Error(), tc.says)
	}
}

func TestOptionsWarnings(t *testing.T) {
	_, warnings, _ := Options{ClusterID: "x", MinClusterSize: 1}.resolve()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "lone node appoints itself")
	_, warnings, _ = Options{ClusterID: "x", MinClusterSize: 2}.resolve()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "HandleConfirmLeader")
	_, warnings, _ = Options{ClusterID: "x", HeartbeatInterval: 100}.resolve()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "not comfortably below ElectionTimeoutMin")
}

func TestOptionsReportEveryProblemAndUnitMistakes(t *testing.T) {
	_, _, err := Options{ElectionTimeoutMin: int(time.Second), GhostTTL: -1}.resolve()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrInvalidOptions))
	assert.Contains(t, err.Error(), "ClusterID is empty")
	assert.Contains(t, err.Error(), "GhostTTL is -1")
	assert.Contains(t, err.Error(), "ElectionTimeoutMin is 1000000000 ms")
	assert.Contains(t, err.Error(), "write 1000 for 1s", "it names the intended value")

	_, _, err = Options{ClusterID: "x", Bootstrap: []gen.ProcessID{{Name: "leader", Node: "nodename"}}}.resolve()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"nodename" is not a node name`)
}

func TestOptionsHeartbeatFollowsShortTimeouts(t *testing.T) {
	cfg, warnings, err := Options{ClusterID: "x", ElectionTimeoutMax: 100}.resolve()
	require.NoError(t, err)
	assert.Empty(t, warnings, "a derived configuration is never one Init warns about")
	assert.Equal(t, 50*time.Millisecond, cfg.electionTimeoutMin)
	assert.Equal(t, 16*time.Millisecond, cfg.heartbeatInterval)

	_, warnings, _ = Options{ClusterID: "x", HeartbeatInterval: 200}.resolve()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "(200 ms) is not below ElectionTimeoutMin (150 ms)")
}

func TestJoinOfAnInvalidNodeNameLeavesTheViewAlone(t *testing.T) {
	h := newStateHarness(t, Options{}, "b@h", "c@h")
	h.e.join(gen.ProcessID{Name: "leader", Node: "nodename"})
	assert.Equal(t, 3, h.e.viewSize())
}
