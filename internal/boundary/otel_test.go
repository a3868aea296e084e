package boundary

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sdkOnly are the OpenTelemetry and Prometheus modules that only commands
// (cmd/) and tests may reach: the library uses the OpenTelemetry API alone
// (DESIGN.md, "otel/ … API only; SDK in cmd/").
var sdkOnly = []string{
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters",
	"github.com/prometheus/",
}

// sdkHosts are this module's packages allowed to reach sdkOnly: helpers
// for the commands.
var sdkHosts = []string{module + "/internal/metricsserve"}

// TestOpenTelemetrySDKOnlyInCommands checks that no library package of the
// module reaches the OpenTelemetry SDK, an exporter or the Prometheus
// client, outside cmd/ and sdkHosts.
func TestOpenTelemetrySDKOnlyInCommands(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Deps", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(p.ImportPath, module+"/cmd/") || hosted(p.ImportPath) {
			continue
		}
		checked++
		for _, d := range p.Deps {
			for _, bad := range sdkOnly {
				if strings.HasPrefix(d, bad) {
					t.Errorf("%s reaches %s: only cmd/ and %v may", p.ImportPath, d, sdkHosts)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("go list reported no package to check")
	}
}

func hosted(path string) bool {
	for _, h := range sdkHosts {
		if path == h {
			return true
		}
	}
	return false
}
