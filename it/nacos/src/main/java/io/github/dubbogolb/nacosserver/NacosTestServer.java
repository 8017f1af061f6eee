/*
 * Launcher for a standalone Nacos 3 server (naming + config, no console UI) used by
 * the dubbogo-lb integration tests, the demo and CI. It does what Nacos' own
 * bootstrap does for the "server" deployment type (that module is not on Maven
 * Central): start the core (non-web) context, which owns the gRPC servers, then the
 * server web context (HTTP Open API) as its child.
 *
 * Settings come from system properties and application.properties; it/nacos.sh passes
 * the flags. With -Dnacos.test.bind.ip=IP the listeners Nacos cannot be configured
 * for (JRaft, see LoopbackServerProvider, and the UDP push socket, below) are bound
 * to IP too.
 */
package io.github.dubbogolb.nacosserver;

import com.alibaba.nacos.NacosServerBasicApplication;
import com.alibaba.nacos.NacosServerWebApplication;
import com.alibaba.nacos.core.listener.startup.NacosStartUp;
import com.alibaba.nacos.core.listener.startup.NacosStartUpManager;
import com.alibaba.nacos.sys.env.DeploymentType;
import com.alibaba.nacos.sys.env.EnvUtil;
import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jmx.export.MBeanExporter;
import org.springframework.jmx.support.RegistrationPolicy;

import java.lang.reflect.Field;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;

public final class NacosTestServer {

    private static final String UDP_CONNECTOR = "com.alibaba.nacos.naming.remote.udp.UdpConnector";

    private NacosTestServer() {
    }

    public static void main(String[] args) throws Exception {
        // Only the server role: the console (its own web port) is never started.
        EnvUtil.setDeploymentType(DeploymentType.SERVER);

        NacosStartUpManager.start(NacosStartUp.CORE_START_UP_PHASE);
        ConfigurableApplicationContext core = new SpringApplicationBuilder(NacosServerBasicApplication.class)
                .web(WebApplicationType.NONE)
                .bannerMode(Banner.Mode.OFF)
                .run(args);
        if (core.getEnvironment().getProperty("spring.jmx.enabled", Boolean.class, false)) {
            // The child context would register the same MBeans again.
            core.getBean(MBeanExporter.class).setRegistrationPolicy(RegistrationPolicy.IGNORE_EXISTING);
        }
        String bindIp = System.getProperty(LoopbackServerProvider.BIND_PROPERTY, "").trim();
        if (!bindIp.isEmpty()) {
            rebindUdpPushSocket(core, bindIp);
        }

        NacosStartUpManager.start(NacosStartUp.WEB_START_UP_PHASE);
        new SpringApplicationBuilder(NacosServerWebApplication.class)
                .parent(core)
                .bannerMode(Banner.Mode.OFF)
                .run(args);
    }

    /**
     * Naming's UdpConnector (pushes to old v1 UDP clients, not used by gRPC clients)
     * opens {@code new DatagramSocket()} on every interface. Swap it for one on bindIp;
     * its receiver thread reads the field on every loop, so it moves to the new socket
     * once the old one is closed (logging one harmless "Socket closed" error to
     * naming-push.log).
     */
    private static void rebindUdpPushSocket(ConfigurableApplicationContext core, String bindIp) {
        try {
            Class<?> type = Class.forName(UDP_CONNECTOR);
            for (Object connector : core.getBeansOfType(type).values()) {
                Field field = type.getDeclaredField("udpSocket");
                field.setAccessible(true);
                DatagramSocket old = (DatagramSocket) field.get(connector);
                field.set(connector, new DatagramSocket(new InetSocketAddress(InetAddress.getByName(bindIp), 0)));
                old.close();
            }
        } catch (ReflectiveOperationException | java.io.IOException | RuntimeException e) {
            System.err.println("nacos-test-server: could not rebind the UDP push socket to " + bindIp + ": " + e);
        }
    }
}
