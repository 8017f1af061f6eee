package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// javaLatency is the service time of the demo's Java provider.
const javaLatency = "5ms"

// startJavaProvider starts the Dubbo Java provider of it/javaprovider.sh
// beside the dubbo-go ones, registered in Nacos at addr, when a JDK and
// Maven (or a cached build) are here, and returns its name and how to stop
// it. Without them it says so and returns "" and no error: the demo runs
// on without a Java provider. Its logs go to a file, named on failure.
func startJavaProvider(ctx context.Context, root, addr string) (name string, stop func(), err error) {
	script := filepath.Join(root, "it", "javaprovider.sh")
	if exec.CommandContext(ctx, "bash", script, "ready").Run() != nil {
		for _, tool := range []string{"java", "mvn"} {
			if _, err := exec.LookPath(tool); err != nil {
				fmt.Printf("no %s on PATH: the demo runs without a Dubbo Java provider (it/javaprovider.sh needs a JDK 17+ and Maven)\n", tool)
				return "", nil, nil
			}
		}
		fmt.Println("building the Dubbo Java provider with it/javaprovider.sh (first run only)...")
		install := exec.CommandContext(ctx, "bash", script, "install")
		install.Stdout, install.Stderr = os.Stderr, os.Stderr
		if err := install.Run(); err != nil {
			return "", nil, fmt.Errorf("it/javaprovider.sh install: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	name = "java-" + javaLatency
	logPath := filepath.Join(os.TempDir(), "dubbogo-lb-demo-java-provider.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command("bash", script, "run", "-registry", addr, "-port", strconv.Itoa(port),
		"-name", name, "-latency", javaLatency, "-weight", "100", "-warmup", "0")
	cmd.Stdout, cmd.Stderr = os.Stdout, logFile // stdout: one line once it serves
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return "", nil, err
	}
	fmt.Printf("started a Dubbo Java provider, %s (its log: %s)\n", name, logPath)
	return name, func() { stopProcess(cmd); _ = logFile.Close() }, nil
}
