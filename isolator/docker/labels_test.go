package docker

import (
	"testing"
)

// Every container devsandbox renders sets every label it reads, so that none is its
// image's: the companion (kept or not), the firewall helper, the sandbox (kept or not).
func TestContainersSetOwnLabels(t *testing.T) {
	p := basePlan()
	comp, _ := companionConfig(p, "img", nil, "vol", map[string]string{LabelProject: "0123abcd"}, false)
	kept, _ := keptCompanionConfig(p, "img", nil, "vol", map[string]string{})
	fw, _ := firewallHelper([]string{"x"}, nil, "target", "img", nil, nil)
	labels := map[string]map[string]string{"companion": comp.Labels, "kept companion": kept.Labels, "firewall helper": fw.Labels}
	for _, keep := range []bool{false, true} {
		o := opts
		o.Keep = keep
		s, err := containerConfig(p, o)
		if err != nil {
			t.Fatal(err)
		}
		labels["sandbox keep="+map[bool]string{false: "false", true: "true"}[keep]] = s.Config.Labels
	}
	for name, l := range labels {
		for _, k := range ownLabelKeys {
			if _, ok := l[k]; !ok {
				t.Errorf("%s: no label %s: an image's would be the container's", name, k)
			}
		}
	}
	if comp.Labels[LabelProject] != "0123abcd" || comp.Labels[LabelRole] != roleCompanion || comp.Labels[LabelKept] != "false" {
		t.Errorf("ownLabels changed a label set: %v", comp.Labels)
	}
	if l := ownLabels(map[string]string{LabelKept: "true"}); l[LabelKept] != "true" || l[LabelName] != "" || len(l) != len(ownLabelKeys) {
		t.Errorf("ownLabels = %v", l)
	}
}
