package docker

import dockercontainer "github.com/docker/docker/api/types/container"

// noHealthcheck turns off the image's HEALTHCHECK in a container devsandbox creates.
// An image is anyone's (a registry's base, a project file's docker.image), and a
// health check is a command the engine runs in the container on its own schedule,
// outside the init: in the companion beside the proxy, as its user (it could read the
// credentials' values from the proxy's memory and leave them in the endpoint volume
// the sandbox shares), in the firewall helper as root with NET_ADMIN in the sandbox's
// network namespace, and in the sandbox outside the syscall policy and the session's
// processes. Every container devsandbox creates from an image names it (a container
// left without one inherits the image's). A fresh value each call: a Config is the
// caller's to change.
func noHealthcheck() *dockercontainer.HealthConfig {
	return &dockercontainer.HealthConfig{Test: []string{"NONE"}}
}
