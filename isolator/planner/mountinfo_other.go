//go:build !linux

package planner

// mountInfoPath is empty where there is no mountinfo: configWritable judges by path
// alone.
const mountInfoPath = ""
