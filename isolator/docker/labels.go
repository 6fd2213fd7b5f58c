package docker

import "github.com/devsandbox/devsandbox/isolator/container"

// ownLabelKeys are the labels devsandbox reads on its containers (and the volumes and
// images it makes, whose keys a container of an image inherits too): `sandboxes
// list`, `rm` and `prune`, the run's sweep, the kept container's and companion's
// spec.
var ownLabelKeys = []string{
	LabelProject, LabelName, LabelDir, LabelVersion, LabelUser, LabelKept, LabelRole,
	LabelSession, LabelSpec, LabelOwner, LabelAnchor, LabelBase, LabelBaseRef, LabelContent,
	container.LabelImage,
}

// ownLabels returns l with every key of ownLabelKeys l does not set set to "". The
// engine gives a container the labels of its image under the ones its config sets:
// an image labelled dev.devsandbox.kept=true or with another project's name would
// otherwise put them on devsandbox's containers (a helper left by a killed run never
// swept, or listed under that project). An empty value is no value to every reader
// here (each compares it with one of its own, or copies it). l is changed and
// returned. Pure.
func ownLabels(l map[string]string) map[string]string {
	if l == nil {
		l = map[string]string{}
	}
	for _, k := range ownLabelKeys {
		if _, ok := l[k]; !ok {
			l[k] = ""
		}
	}
	return l
}
