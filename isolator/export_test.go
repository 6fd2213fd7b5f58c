package isolator

// NewView and NewContainerView are bwrap's and a container's views of p, for this
// package's tests of a View; outside them a View comes from the isolator (ViewOf).
func NewView(p *Plan) *View { return newView(p, nil) }

func NewContainerView(p *Plan, home ContainerHome) *View { return newView(p, &home) }
