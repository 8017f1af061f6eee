/*
 * Nacos' own gRPC servers (SDK 9848, cluster 9849) honour -Dnacos.remote.grpc.listen.ip,
 * but the embedded JRaft server (7848, started even in standalone mode) is created with
 * io.grpc.ServerBuilder.forPort(port), i.e. on every interface. This provider outranks
 * grpc-netty-shaded's (priority 5) and turns forPort(port) into a server on
 * BIND_PROPERTY's address, so that JRaft listens on loopback only. Without the property
 * it behaves exactly like the stock provider.
 */
package io.github.dubbogolb.nacosserver;

import io.grpc.ServerBuilder;
import io.grpc.ServerProvider;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;

import java.net.InetSocketAddress;

public final class LoopbackServerProvider extends ServerProvider {

    /** System property naming the single address every listener should bind to. */
    static final String BIND_PROPERTY = "nacos.test.bind.ip";

    @Override
    protected boolean isAvailable() {
        return true;
    }

    @Override
    protected int priority() {
        return 6;
    }

    @Override
    protected ServerBuilder<?> builderForPort(int port) {
        String ip = System.getProperty(BIND_PROPERTY, "").trim();
        if (ip.isEmpty()) {
            return NettyServerBuilder.forPort(port);
        }
        return NettyServerBuilder.forAddress(new InetSocketAddress(ip, port));
    }
}
