package generator

import (
	"testing"

	"github.com/agentbox-dev/agentbox/catalog"
	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/testing/configtest"
)

// TestJSONSchemaInitFile: the file `agentbox init` writes passes the schema.
func TestJSONSchemaInitFile(t *testing.T) {
	sch := configtest.Schema(t, config.JSONSchema(), config.SchemaID)
	for _, agent := range catalog.AgentNames() {
		for _, ide := range config.IDEs {
			t.Run(agent+"-"+ide, func(t *testing.T) {
				data, err := InitFile(t.TempDir(), "my-project", agent, ide)
				if err != nil {
					t.Fatal(err)
				}
				v, ok := configtest.Instance(t, data)
				if !ok {
					t.Fatal("not one plain YAML document")
				}
				if err := sch.Validate(v); err != nil {
					t.Errorf("%v\n%s", err, data)
				}
			})
		}
	}
}
